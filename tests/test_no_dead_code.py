"""Every function and class defined at module level in the service (`service/pokna`) or the verifier
(`verifier/pokna_verify`) is reached from code that runs outside the tests: the packages' own module-level
code and entry points, the migrations, `scripts/` and `bench/`. A definition only tests reach is a second
way of doing what the product does another way, kept alive by the test that checks it; one nothing reaches
is dead. Either goes, with its tests (a test helper moves to tests/support), or is named below with why.

Read with `ast`, never imported: a name is reached through what it is bound to (`from pokna.x import f`,
`x.f` on a module, `f` in its own module, "pokna.x:f" in a string or pyproject.toml), through a package's
re-export to where it is defined, and only from code that is itself reached (a helper whose only caller is
dead is dead too). A definition whose decorator registers it (a route, a command, an event listener) is
reached by that registration, and a table's model by being declared (Alembic compares the models).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {ROOT / "service" / "pokna": "pokna", ROOT / "verifier" / "pokna_verify": "pokna_verify"}
# Outside the packages, code that runs in production or by hand: its every reference counts.
RUN_OUTSIDE = ("migrations", "scripts", "bench")
PROJECTS = (ROOT / "pyproject.toml", ROOT / "verifier" / "pyproject.toml")
_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# `@router.post(...)`, `@app.command(...)`, `@event.listens_for(...)`: the decorator is the caller.
_REGISTERING = {"get", "post", "put", "patch", "delete", "api_route", "command", "callback", "listens_for"}
_DECLARED = re.compile(r"pokna\.db\.models(\..+)?")  # SQLAlchemy models: the schema Alembic compares
_STRING_REFERENCE = re.compile(r"\b((?:pokna|pokna_verify)(?:\.\w+)+):(\w+)")

# Reached only in ways the reading above cannot see, or kept for users outside this repository.
REACHED_OTHERWISE = {
    ("pokna.cli.database_url", "leave_started_clusters"): (
        "called by pokna.cli.group through sys.modules, so a command that never opened a database never "
        "imports the database code"
    ),
    # pokna_verify is published for players, auditors and integrators: what it exports is its API.
    ("pokna_verify.fairness.beacon_acceptance", "acceptance_problems"): (
        "a player's client's check of a beacon acceptance (docs/fairness.md names it)"
    ),
    ("pokna_verify.fairness.beacon_acceptance", "proof_problems_against"): (
        "a player's client's check of a kept acceptance against the revealed proof (docs/fairness.md)"
    ),
    (
        "pokna_verify.crypto.signing",
        "verify_document",
    ): "pokna_verify.crypto's yes/no form of signature_problem",
    (
        "pokna_verify.game.table",
        "game_seat_of",
    ): "exported by pokna_verify.game: the inverse of round_seating",
    ("pokna_verify.game.replay", "replay"): "exported by pokna_verify.game: a recorded game re-run",
    ("pokna_verify.game.replay", "replay_steps"): "exported by pokna_verify.game, with RecordedStep",
    ("pokna_verify.game.replay", "faces_rolled"): "exported by pokna_verify.game: what a RecordedStep stores",
    ("pokna_verify.ledger.check", "verify_export"): (
        "the pure-Python check of an export's lines that docs/ledger.md names for auditors"
    ),
}

Key = tuple[str, str]  # (module, name)


@dataclass
class Module:
    name: str
    is_package: bool
    tree: ast.Module
    path: str = ""
    bound: dict[str, Key | str] = field(default_factory=dict)  # local name -> (module, name) or a module

    @property
    def definitions(self) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
        return (node for node in self.tree.body if isinstance(node, _DEFINITION))


def _module_of(path: Path) -> tuple[str, bool]:
    for root, package in PACKAGES.items():
        if path.is_relative_to(root):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            break
    else:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts), path.name == "__init__.py"


def _read(paths: Iterable[Path]) -> list[Module]:
    modules = []
    for path in sorted(paths):
        name, is_package = _module_of(path)
        modules.append(
            Module(name, is_package, ast.parse(path.read_text()), path.relative_to(ROOT).as_posix())
        )
    return modules


class Reading:
    """What the packages define and what reaches what."""

    def __init__(self, packages: list[Module]) -> None:
        self.module_names = {module.name for module in packages}
        self.packages = packages
        # A package's `from .x import f` that the package itself does not use re-exports f:
        # (package, f) stands for (package.x, f).
        self.reexports: dict[Key, Key] = {}
        for _ in range(3):  # a re-export shadows a submodule of its name (`pokna.ledger.reconcile`)
            for module in packages:
                self._bind(module)
                self.reexports.update(self._reexports_of(module))
        self.defined: dict[Key, str] = {}
        self.calls: dict[Key, set[Key]] = {}
        self.roots: set[Key] = set()
        for module in packages:
            self.roots |= self._top_level_references(module)
            for node in module.definitions:
                key = (module.name, node.name)
                self.defined[key] = f"{module.path}:{node.lineno}"
                self.calls[key] = self.references(module, node, skip=node.name)
                if _DECLARED.fullmatch(module.name) or any(_registers(d) for d in node.decorator_list):
                    self.roots.add(key)

    @staticmethod
    def _reexports_of(module: Module) -> dict[Key, Key]:
        used = {node.id for node in ast.walk(module.tree) if isinstance(node, ast.Name)}
        found: dict[Key, Key] = {}
        for node in module.tree.body:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    local = alias.asname or alias.name
                    target = module.bound.get(local)
                    if isinstance(target, tuple) and local not in used:
                        found[(module.name, local)] = target
        return found

    def _bind(self, module: Module) -> None:
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    module.bound[local] = alias.name if alias.asname else local
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                source = ".".join([*base, *filter(None, [node.module])])
                for alias in node.names:
                    module.bound[alias.asname or alias.name] = self._member(source, alias.name)

    def _member(self, module: str, name: str) -> Key | str:
        """What `module.name` is: a module, or a name defined (or re-exported) there."""
        if (module, name) in self.reexports or f"{module}.{name}" not in self.module_names:
            return (module, name)
        return f"{module}.{name}"

    def read(self, module: Module) -> Module:
        """Bind a module outside the packages (a test, a script) to the packages' names."""
        self._bind(module)
        return module

    def references(self, module: Module, node: ast.AST, skip: str | None = None) -> set[Key]:
        own = {definition.name for definition in module.definitions}
        found: set[Key] = set()
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id != skip:
                target = module.bound.get(child.id)
                if isinstance(target, tuple):
                    found.add(target)
                elif child.id in own and target is None:
                    found.add((module.name, child.id))
            elif isinstance(child, ast.Attribute):
                found |= self._attribute(module, child)
            elif isinstance(child, ast.Constant) and isinstance(child.value, str):
                found.update(_STRING_REFERENCE.findall(child.value))
                if child.value in own and child.value != skip:  # a forward reference: "LockedGame"
                    found.add((module.name, child.value))
        return {self.defined_at(key) for key in found}

    def _attribute(self, module: Module, node: ast.Attribute) -> set[Key]:
        """`ledger.reads.get_transaction` with `ledger` bound to the package pokna.ledger."""
        chain: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        target = module.bound.get(base.id) if isinstance(base, ast.Name) else None
        if not isinstance(target, str):
            return set()
        for name in reversed(chain):
            member = self._member(target, name)
            if isinstance(member, tuple):
                return {member}
            target = member
        return set()

    def defined_at(self, key: Key) -> Key:
        seen = 0
        while key in self.reexports and seen < 20:
            key, seen = self.reexports[key], seen + 1
        return key

    def _top_level_references(self, module: Module) -> set[Key]:
        """What a module's own code reaches when it is imported: all but its definitions, its imports and
        `__all__` (a list of names a user may import is no use of them)."""
        found: set[Key] = set()
        for node in module.tree.body:
            if isinstance(node, (*_DEFINITION, ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
            ):
                continue
            found |= self.references(module, node)
        return found

    def reached_from(self, start: Iterable[Key]) -> set[Key]:
        reached: set[Key] = set()
        todo = [self.defined_at(key) for key in start]
        while todo:
            key = todo.pop()
            if key not in reached:
                reached.add(key)
                todo.extend(self.calls.get(key, ()))
        return reached


def _registers(decorator: ast.expr) -> bool:
    return (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr in _REGISTERING
    )


def _everything_outside(reading: Reading, modules: Iterable[Module]) -> set[Key]:
    return {key for module in modules for key in reading.references(reading.read(module), module.tree)}


def _unreached() -> tuple[Reading, set[Key], set[Key]]:
    reading = Reading(_read(path for root in PACKAGES for path in root.rglob("*.py")))
    outside = _read(path for folder in RUN_OUTSIDE for path in (ROOT / folder).rglob("*.py"))
    entry_points = {key for project in PROJECTS for key in _STRING_REFERENCE.findall(project.read_text())}
    live = reading.reached_from(
        reading.roots | _everything_outside(reading, outside) | entry_points | set(REACHED_OTHERWISE)
    )
    tested = reading.reached_from(_everything_outside(reading, _read((ROOT / "tests").rglob("*.py"))))
    return reading, live, tested


def test_every_definition_is_reached_from_outside_the_tests() -> None:
    reading, live, tested = _unreached()
    only_tests = sorted(
        f"{reading.defined[key]} {key[1]}" for key in reading.defined.keys() - live if key in tested
    )
    nowhere = sorted(f"{reading.defined[key]} {key[1]}" for key in reading.defined.keys() - live - tested)
    advice = (
        "delete them (and the tests that test only them), move a test helper to tests/support, or say in "
        "REACHED_OTHERWISE why it stays"
    )
    assert not only_tests, f"reached only from tests: {only_tests}: {advice}"
    assert not nowhere, f"reached from nowhere: {nowhere}: {advice}"


def test_every_exception_is_still_needed() -> None:
    reading, _, _ = _unreached()
    for key, why in REACHED_OTHERWISE.items():
        assert key in reading.defined, f"{key} is no longer defined ({why}): take it out of REACHED_OTHERWISE"


def _source(name: str, text: str, is_package: bool = False) -> Module:
    return Module(name, is_package, ast.parse(text))


def test_the_reading_finds_what_only_tests_reach() -> None:
    reading = Reading(
        [
            _source("pokna", "from pokna.core import used, exported\n", is_package=True),
            _source(
                "pokna.core",
                "def used():\n    return helper()\n\ndef helper():\n    return 1\n\n"
                "def exported():\n    return helper_of_dead()\n\ndef helper_of_dead():\n    return 2\n\n"
                "def dead():\n    return dead()\n\nclass Shown:\n    pass\n\nVALUE = 'pokna.core:Shown'\n",
            ),
            _source("pokna.app", "from pokna import core\n\ndef main():\n    return core.used()\n"),
        ]
    )
    live = reading.reached_from({*reading.roots, ("pokna.app", "main")})
    assert live == {
        ("pokna.app", "main"),
        ("pokna.core", "used"),
        ("pokna.core", "helper"),
        ("pokna.core", "Shown"),
    }
    tests = _source("test_p", "import pokna\n\ndef test_it():\n    assert pokna.exported() == 2\n")
    assert reading.reached_from(_everything_outside(reading, [tests])) == {
        ("pokna.core", "exported"),
        ("pokna.core", "helper_of_dead"),
    }
