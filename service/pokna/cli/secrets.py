"""`pokna secrets ...`: production secrets an operator can paste, and the public half of the signing key.

`generate` prints a fresh Ed25519 signing key and seed encryption key to stdout and nothing else there, so
`pokna secrets generate >> .env` is the whole set-up; advice goes to stderr. The PEM stays a real multi-line
PEM inside double quotes: that is what POKNA_SIGNING_KEY accepts, and what Docker Compose's `.env`, a
shell's `set -a; . ./pokna.env` and pydantic-settings' env files all read back unchanged (a PEM folded into
literal `\\n` would reach the key loader as backslashes).

`public-key` prints the public half of the configured key: what key rotation files under
`<data dir>/keys/retired/` so that proofs and checkpoints it signed keep verifying.
"""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from pokna.cli.app import app
from pokna_verify.crypto.signing import generate_signing_key, key_id_of, private_key_to_pem, public_key_to_pem
from pokna_verify.fairness.seed_vault import generate_vault_key

SIGNING_KEY_VARIABLE = "POKNA_SIGNING_KEY"
SEED_KEY_VARIABLE = "POKNA_SEED_ENCRYPTION_KEY"
# The services of docker-compose.yml that load the keys (every one that runs with POKNA_ENV=production).
COMPOSE_SERVICES = ("migrate", "api", "sweeper", "webhooks", "sequencer")

secrets_app = typer.Typer(
    help="Production secrets: generate them, and publish a retiring key.", no_args_is_help=True
)
app.add_typer(secrets_app, name="secrets")


class SecretsFormat(StrEnum):
    ENV = "env"
    COMPOSE = "compose"
    JSON = "json"


def _env_file(signing_pem: str, seed_hex: str, key_id: str) -> str:
    return (
        f"# Pokna production secrets, signing key {key_id}. Keep this file out of version control.\n"
        f'{SIGNING_KEY_VARIABLE}="{signing_pem.rstrip()}"\n'
        f"{SEED_KEY_VARIABLE}={seed_hex}\n"
    )


def _compose_override(signing_pem: str, seed_hex: str, key_id: str) -> str:
    pem_block = "".join(f"    {line}\n" for line in signing_pem.rstrip().splitlines())
    services = "".join(f"  {name}:\n    environment: *pokna-secrets\n" for name in COMPOSE_SERVICES)
    return (
        f"# docker-compose.override.yml: Pokna production secrets, signing key {key_id}.\n"
        "# Compose merges this file into docker-compose.yml. Keep it out of version control.\n"
        "x-pokna-secrets: &pokna-secrets\n"
        f"  {SIGNING_KEY_VARIABLE}: |\n{pem_block}"
        f'  {SEED_KEY_VARIABLE}: "{seed_hex}"\n'
        f"services:\n{services}"
    )


def _json_document(signing_pem: str, seed_hex: str, key_id: str) -> str:
    document = {"key_id": key_id, SIGNING_KEY_VARIABLE: signing_pem, SEED_KEY_VARIABLE: seed_hex}
    return json.dumps(document, indent=2) + "\n"


RENDERERS = {
    SecretsFormat.ENV: _env_file,
    SecretsFormat.COMPOSE: _compose_override,
    SecretsFormat.JSON: _json_document,
}


def _write_private(path: Path, text: str) -> None:
    """Created with mode 0600 from the start (never world-readable, not even for a moment); never overwritten."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as error:
        raise typer.BadParameter(
            f"{path} exists; refusing to overwrite secrets", param_hint="--output"
        ) from error
    except OSError as error:
        raise typer.BadParameter(f"cannot create {path}: {error.strerror}", param_hint="--output") from error
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


@secrets_app.command("generate")
def generate_command(
    output_format: Annotated[
        SecretsFormat,
        typer.Option(
            "--format",
            help="env: lines for an env file or Compose's .env; compose: a docker-compose.override.yml; json.",
        ),
    ] = SecretsFormat.ENV,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write to this new file (mode 0600) instead of stdout."),
    ] = None,
) -> None:
    """Print a fresh signing key (Ed25519, PKCS#8 PEM) and seed encryption key (64 hex) for production."""
    signing_key = generate_signing_key()
    signing_pem = private_key_to_pem(signing_key).decode("ascii")
    key_id = key_id_of(signing_key.public_key())
    text = RENDERERS[output_format](signing_pem, generate_vault_key().hex(), key_id)
    if output is None:
        typer.echo(text, nl=False)
    else:
        _write_private(output, text)
    typer.echo(
        f"New signing key {key_id}. Store these secrets in your secret store or a mode-0600 file outside\n"
        f"version control. Back up {SEED_KEY_VARIABLE}: without it, the server seeds of games not yet over\n"
        "cannot be revealed. Never change it while games are open; rotate only the signing key\n"
        '(docs/operations.md, "Rotating the signing key").',
        err=True,
    )


@secrets_app.command("public-key")
def public_key_command(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file instead of stdout.")
    ] = None,
) -> None:
    """Print the public key (PEM) of the configured signing key, e.g. to retire it into <data dir>/keys/retired/."""
    from pokna.service_keys import load_service_keys
    from pokna.settings import get_settings

    public_key = load_service_keys(get_settings()).signing_key.public_key()
    pem = public_key_to_pem(public_key).decode("ascii")
    if output is None:
        typer.echo(pem, nl=False)
    else:
        _file_public_key(output, pem)
    typer.echo(f"public key of {key_id_of(public_key)}", err=True)


def _file_public_key(path: Path, pem: str) -> None:
    """Never over another key: filed into keys/retired/ under a name a past rotation used, it would lose
    that key, and every proof and checkpoint it signed would stop verifying. The same key again is a no-op."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="ascii") as handle:
            handle.write(pem)
    except FileExistsError:
        if path.is_file() and path.read_text(encoding="ascii", errors="replace") == pem:
            return
        what = "is a directory" if path.is_dir() else "exists and is not this key; refusing to overwrite it"
        raise typer.BadParameter(f"{path} {what} (give a new file's name)", param_hint="--output") from None
