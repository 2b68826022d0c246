"""No Docker engine runs here, so the Compose file is checked against the Compose specification schema
(tests/fixtures/compose_spec.json, from the compose-spec project, Apache-2.0) and for the ordering we need."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from typer.testing import CliRunner

import pokna.cli  # noqa: F401  (registers every command)
from pokna.cli.app import app

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return document


def test_compose_file_matches_the_compose_specification() -> None:
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    jsonschema.Draft201909Validator(schema).validate(_compose())


def test_compose_spec_schema_rejects_a_broken_file() -> None:
    schema = json.loads((ROOT / "tests" / "fixtures" / "compose_spec.json").read_text())
    broken = _compose()
    broken["services"]["api"]["depends_on"] = {"postgres": {"condition": "whenever"}}
    try:
        jsonschema.Draft201909Validator(schema).validate(broken)
    except jsonschema.ValidationError:
        return
    raise AssertionError("the schema accepted an invalid depends_on condition")


def test_api_waits_for_healthy_postgres_and_finished_migrations() -> None:
    services = _compose()["services"]
    assert "healthcheck" in services["postgres"]
    assert services["api"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["command"] == ["pokna", "db", "upgrade"]
    assert "--no-migrate" in services["api"]["command"]


def test_data_lives_on_named_volumes() -> None:
    compose = _compose()
    named = set(compose["volumes"])
    mounts = [mount for service in compose["services"].values() for mount in service.get("volumes", [])]
    assert {mount.split(":")[0] for mount in mounts} <= named


def test_dockerfile_installs_from_the_pinned_constraints() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "-c /tmp/constraints.txt" in dockerfile
    assert "COPY migrations" in dockerfile


# --- the image --------------------------------------------------------------------------------------------


def _dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    stages = [index for index, line in enumerate(lines) if line.upper().startswith("FROM ")]
    final = lines[stages[-1] :]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in final]


def test_the_image_installs_a_built_wheel_not_an_editable_checkout() -> None:
    installs = [args for op, args in _dockerfile_instructions() if op == "RUN" and "pip install" in args]
    assert installs, "the final stage installs nothing"
    for args in installs:
        words = shlex.split(args.split("&&")[0])
        assert "-e" not in words, args
        assert "--editable" not in words, args
        assert any(word.endswith(".whl") for word in words), args
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip wheel --no-deps" in dockerfile


def test_the_image_places_the_migrations_where_the_installed_package_looks() -> None:
    runs = " ".join(args for op, args in _dockerfile_instructions() if op == "RUN")
    assert "from pokna.db.migrate import MIGRATIONS_DIR" in runs
    assert "head_revision()" in runs  # the build fails if the installed package cannot see them


def test_the_image_runs_as_an_unprivileged_user_with_a_healthcheck() -> None:
    instructions = _dockerfile_instructions()
    users = [args for op, args in instructions if op == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "a numeric uid lets an orchestrator check runAsNonRoot"
    healthchecks = [args for op, args in instructions if op == "HEALTHCHECK"]
    assert len(healthchecks) == 1
    assert "/healthz" in healthchecks[0]
    assert instructions[-1] == ("CMD", '["pokna", "serve", "--no-migrate"]')


# --- what compose runs is real -----------------------------------------------------------------------------

POKNA_INVOCATION = re.compile(r"(?:^|[\s/(])pokna[ \t]+([a-z][\w-]*(?:[^|;<>&)\n#])*)")


def _pokna_argvs(text: str) -> list[list[str]]:
    return [shlex.split(match.group(1)) for match in POKNA_INVOCATION.finditer(text)]


def _compose_argvs() -> dict[str, list[list[str]]]:
    argvs: dict[str, list[list[str]]] = {}
    for name, service in _compose()["services"].items():
        command = service.get("command")
        if command is None:
            continue
        assert isinstance(command, list), f"{name}: write the command as a list"
        if command[0] == "pokna":
            argvs[name] = [command[1:]]
        elif command[:2] == ["sh", "-c"]:
            argvs[name] = _pokna_argvs(command[2])
    return argvs


def _documented_compose_argvs() -> list[list[str]]:
    """Every `pokna ...` in a shell block of the operations guide and the README."""
    argvs = []
    for path in (ROOT / "docs" / "operations.md", ROOT / "README.md"):
        blocks = re.findall(r"```(?:sh|console|bash)\n(.*?)```", path.read_text(), flags=re.DOTALL)
        for block in blocks:
            argvs += _pokna_argvs(block)
    return argvs


def _assert_real_command(argv: list[str]) -> None:
    result = CliRunner().invoke(app, [*argv, "--help"])
    assert result.exit_code == 0, f"pokna {' '.join(argv)}: {result.output}"
    assert "Usage: pokna" in result.output


def test_every_command_compose_runs_is_a_real_pokna_command() -> None:
    argvs = _compose_argvs()
    assert argvs["migrate"] == [["db", "upgrade"]]
    assert argvs["sweeper"] == [["sweep", "--json"]]
    assert argvs["api"][0][0] == "serve"
    for service_argvs in argvs.values():
        for argv in service_argvs:
            _assert_real_command(argv)


def test_every_documented_operator_command_is_a_real_pokna_command() -> None:
    argvs = _documented_compose_argvs()
    spoken = {" ".join(argv[:2]) for argv in argvs}
    assert {"tenants create", "secrets generate", "secrets public-key", "audit verify"} <= spoken
    assert {"ledger export", "ledger checkpoint"} <= spoken
    for argv in argvs:
        _assert_real_command(argv)


def test_the_invocation_pattern_finds_commands_and_skips_database_names() -> None:
    text = (
        'pg_dump -U pokna -Fc pokna > pokna.dump\ndocker compose run --rm api pokna tenants create "A B" | x'
    )
    assert _pokna_argvs(text) == [["tenants", "create", "A B"]]
    assert _pokna_argvs("$(pokna secrets generate)") == [["secrets", "generate"]]


# --- scaling and housekeeping -----------------------------------------------------------------------------


def test_the_api_scales_without_a_host_port_conflict() -> None:
    for port in _compose()["services"]["api"].get("ports", []):
        published = str(port).rsplit(":", 1)[0] if ":" in str(port) else ""
        host_port = published.rsplit(":", 1)[-1]
        assert host_port == "" or "-" in host_port, f"{port}: a fixed host port allows one API container"


def test_the_sweeper_is_its_own_service_after_migrations() -> None:
    services = _compose()["services"]
    sweeper = services["sweeper"]
    assert sweeper["environment"] == services["api"]["environment"]
    assert sweeper["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert sweeper["restart"] == "unless-stopped"
    assert "sleep" in sweeper["command"][2]
    assert "ports" not in sweeper


def test_services_without_http_do_not_inherit_the_image_healthcheck() -> None:
    services = _compose()["services"]
    for name in ("migrate", "sweeper", "webhooks", "sequencer"):
        assert services[name]["healthcheck"] == {"disable": True}, name


def test_the_webhooks_worker_is_its_own_scalable_service_after_migrations() -> None:
    services = _compose()["services"]
    worker = services["webhooks"]
    assert _compose_argvs()["webhooks"] == [["webhooks", "deliver"]]
    assert worker["environment"] == services["api"]["environment"]
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert worker["restart"] == "unless-stopped"
    assert "ports" not in worker


def test_the_public_logs_sequencer_is_its_own_service_after_migrations() -> None:
    services = _compose()["services"]
    sequencer = services["sequencer"]
    assert _compose_argvs()["sequencer"] == [["log", "sequence"]]
    assert sequencer["environment"] == services["api"]["environment"]
    assert sequencer["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert sequencer["restart"] == "unless-stopped"
    assert "ports" not in sequencer


def _pokna_services() -> dict[str, dict[str, Any]]:
    return {name: service for name, service in _compose()["services"].items() if service.get("build") == "."}


def test_every_setting_in_dot_env_reaches_every_pokna_container() -> None:
    """Settings an operator puts in .env (docs/operations.md tells them to) must not be silently ignored:
    only the variables named under `environment` reached the containers before."""
    services = _pokna_services()
    assert set(services) == {"migrate", "api", "sweeper", "webhooks", "sequencer"}
    for name, service in services.items():
        env_files = service.get("env_file")
        assert (env_files if isinstance(env_files, list) else [env_files]) == [".env"], name


def test_the_restore_procedure_stops_every_writer() -> None:
    """Every service that writes to the database (all but the one-shot migration) is stopped before the
    database is dropped and restored."""
    operations = (ROOT / "docs" / "operations.md").read_text()
    restore = operations[operations.index("## 6. Backing up and restoring") : operations.index("## 7.")]
    stops = re.findall(r"^docker compose stop (.+)$", restore, flags=re.MULTILINE)
    assert len(stops) == 1, stops
    writers = set(_pokna_services()) - {"migrate"}
    assert set(stops[0].split()) == writers


def test_the_images_build_stage_makes_wheels_that_carry_every_file_the_service_reads(tmp_path: Path) -> None:
    """The build stage's own command, run here: both wheels, and in them the SQL in force, the page and its
    modules, the verifier's JavaScript core; the service's wheel asks for the verifier's."""
    import shutil
    import subprocess
    import sys
    import zipfile

    dockerfile = (ROOT / "Dockerfile").read_text().split("\nFROM ", 2)[1]  # the build stage
    source, wheel_dir = tmp_path / "src", tmp_path / "wheels"
    for copy in re.findall(r"^COPY (.+) \S+$", dockerfile, flags=re.MULTILINE):
        for name in copy.split():
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                source.mkdir(exist_ok=True)
                shutil.copy2(ROOT / name, source / name)
    build = re.search(r"^RUN (pip wheel .*)$", dockerfile, flags=re.MULTILINE)
    assert build, "the build stage builds no wheel"
    argv = shlex.split(build.group(1).replace("/wheels", str(wheel_dir)))
    subprocess.run([sys.executable, "-m", *argv], cwd=source, check=True, capture_output=True, timeout=300)
    wheels = {path.name.split("-")[0]: path for path in wheel_dir.glob("*.whl")}
    assert set(wheels) == {"pokna", "pokna_verify"}
    service = zipfile.ZipFile(wheels["pokna"]).namelist()
    core = zipfile.ZipFile(wheels["pokna_verify"]).namelist()
    for path in (ROOT / "service" / "pokna").rglob("*"):
        if path.suffix in {".sql", ".html", ".js", ".css"}:
            assert path.relative_to(ROOT / "service").as_posix() in service, path
    for path in (ROOT / "verifier" / "pokna_verify").rglob("*"):
        if path.suffix in {".py", ".js", ".json"} and "__pycache__" not in path.parts:
            assert path.relative_to(ROOT / "verifier").as_posix() in core, path
    metadata = zipfile.ZipFile(wheels["pokna"]).read(
        next(name for name in service if name.endswith(".dist-info/METADATA"))
    )
    assert b"Requires-Dist: pokna-verify" in metadata
