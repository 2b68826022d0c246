"""docs/architecture.md is the map of the shell and of its core; these tests hold the code to it, so the two
cannot drift.

- The layer tables there say which parts of `pokna` (under "Layers") and of `pokna_verify` (under "The
  core") each part may import; every import in either package is checked against its table, and each
  table itself must list lower layers first (no import may point back up).
- No module of either package imports, directly or not, one that imports it back (function-local and
  TYPE_CHECKING imports count: one that breaks a cycle at run time only hides it); no module is over
  400 lines.
- The walk of one game action names functions as `module:function`; each must exist, as must every module
  a docstring names in backticks (`pokna.dealer.store_postgres`).
- Rules the issue set for the shell: the database is chosen in one place; no route touches a session;
  routes (the kernel's, the assembly's and every domain's `routes.py` / `*_routes.py`) reach the domains
  through their services, never their tables, repositories or stores.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

import pokna

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(pokna.__file__).parent
VERIFIER = ROOT / "verifier" / "pokna_verify"
DOC = ROOT / "docs" / "architecture.md"
SOURCES = sorted(PACKAGE.rglob("*.py"))
VERIFIER_SOURCES = sorted(VERIFIER.rglob("*.py"))
EVERY_SOURCE = SOURCES + VERIFIER_SOURCES
# Each package, the heading of its layer table in docs/architecture.md, and its sources.
PACKAGES = {"pokna": ("## Layers", SOURCES), "pokna_verify": ("## The core", VERIFIER_SOURCES)}
MAX_LINES = 400
# The one module that reads which database a URL or engine speaks (and refuses any but PostgreSQL).
CHOOSES_THE_DATABASE = {"db/backend.py"}


def _relative(source: Path) -> str:
    return source.relative_to(PACKAGE).as_posix()


def _shown(source: Path) -> str:
    return source.relative_to(ROOT).as_posix()


def _part_of(module: str) -> str:
    """`pokna.ledger.moving` -> `ledger`; `pokna.runtime` -> `runtime`; `pokna_verify.bundle.scan` -> `bundle`."""
    return module.split(".")[1] if module.count(".") >= 1 else module


def _module_name(source: Path) -> str:
    root = VERIFIER if source.is_relative_to(VERIFIER) else PACKAGE
    parts = [root.name, *source.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_entry(module: str) -> bool:
    """The package itself and `python -m`'s module: above every part, in no row of a table."""
    return "." not in module or module.endswith(".__main__")


def _imports(source: Path) -> list[tuple[str, list[str]]]:
    return _imports_in(source.read_text(), _module_name(source), source.name == "__init__.py")


def _imports_in(text: str, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """Every import of a module's text, at any depth (function-local and TYPE_CHECKING imports count), as
    (module, names taken from it): `import a.b` is ("a.b", []); a relative import is resolved."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.append(
                (".".join([*base, *filter(None, [node.module])]), [alias.name for alias in node.names])
            )
    return found


def _package_imports(source: Path, package: str) -> set[str]:
    """Every `package.*` module the file imports: `from pokna import ledger` names `pokna.ledger`
    (`__version__` is the package's own)."""
    found: set[str] = set()
    for module, names in _imports(source):
        if module == package:
            found.update(f"{package}.{name}" for name in names if not name.startswith("__"))
        elif module.startswith(f"{package}."):
            found.add(module)
    return found


def _pokna_imports(source: Path) -> set[str]:
    return _package_imports(source, "pokna")


def _layer_table(heading: str = "## Layers") -> list[tuple[list[str], set[str]]]:
    """Rows of the table under `heading`: (parts named in the first column, parts they may import)."""
    text = DOC.read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        parts = re.findall(r"`([a-z_]+)`", cells[0])
        may_import = set(re.findall(r"`([a-z_]+)`", cells[-1]))
        rows.append((parts, may_import))
    return rows


@pytest.mark.parametrize("package", PACKAGES)
def test_the_layer_table_lists_every_part_once_lower_layers_first(package: str) -> None:
    heading, sources = PACKAGES[package]
    rows = _layer_table(heading)
    named = [part for parts, _ in rows for part in parts]
    assert len(named) == len(set(named)), f"a part appears twice in {package}'s layer table"
    actual = {_part_of(_module_name(source)) for source in sources if not _is_entry(_module_name(source))}
    assert set(named) == actual, f"table vs code: missing {actual - set(named)}, extra {set(named) - actual}"
    above: set[str] = set()
    for parts, may_import in rows:
        assert may_import <= above, f"{parts} may import {may_import - above}, which is not below them"
        above.update(parts)


@pytest.mark.parametrize("source", EVERY_SOURCE, ids=_shown)
def test_imports_follow_the_layer_table(source: Path) -> None:
    module = _module_name(source)
    if _is_entry(module):
        return
    package = module.split(".")[0]
    allowed = {part: may_import for parts, may_import in _layer_table(PACKAGES[package][0]) for part in parts}
    part = _part_of(module)
    for imported in _package_imports(source, package):
        target = _part_of(imported)
        assert target == part or target in allowed[part], (
            f"{_shown(source)} imports {imported}: docs/architecture.md does not let `{part}` import `{target}`"
        )


def test_the_walk_of_a_game_action_names_real_functions() -> None:
    walk = DOC.read_text().split("## One game action", 1)[1].split("\n## ", 1)[0]
    references = re.findall(r"`(pokna(?:\.[a-z_]+)+):([A-Za-z_][A-Za-z_.]*)`", walk)
    assert len(references) >= 8, "the walk names its steps as `module:function`"
    for module, dotted in references:
        found: object = importlib.import_module(module)
        for name in dotted.split("."):
            assert hasattr(found, name), f"{module}:{dotted} does not exist"
            found = getattr(found, name)


@pytest.mark.parametrize("source", EVERY_SOURCE, ids=_shown)
def test_no_module_is_longer_than_one_sitting(source: Path) -> None:
    lines = len(source.read_text().splitlines())
    assert lines <= MAX_LINES, f"{_shown(source)} has {lines} lines; split it by meaning"


@pytest.mark.parametrize("source", SOURCES, ids=_relative)
def test_the_database_is_chosen_in_one_place(source: Path) -> None:
    if _relative(source) in CHOOSES_THE_DATABASE:
        return
    text = source.read_text()
    for word in ("dialect", "get_backend_name", "is_postgresql", "is_sqlite"):
        assert word not in text, (
            f"{_relative(source)} mentions {word}: PostgreSQL is the only database (pokna.db.backend)"
        )


# The one module that names SQLSTATEs and says what a database error means.
NAMES_THE_SQLSTATES = {"db/sqlstates.py"}
_SQLSTATE = re.compile(r"PK\d{3}|\d\d[0-9A-Z]\d\d")


@pytest.mark.parametrize("source", SOURCES, ids=_relative)
def test_sqlstates_are_named_in_one_place(source: Path) -> None:
    """A code the database raises is a string in `pokna.db.sqlstates` and nowhere else, so what it means is
    read in one place (`refusal`, and the domains' branches on its names)."""
    if _relative(source) in NAMES_THE_SQLSTATES:
        return
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not _SQLSTATE.fullmatch(node.value), (
                f"{_relative(source)} spells SQLSTATE {node.value}: name it in pokna.db.sqlstates"
            )


# The one module that sends BEGIN, COMMIT and ROLLBACK as statements: the keyed transaction.
SPELLS_THE_TRANSACTION = {"idempotency/keyed.py"}
_TRANSACTION_STATEMENT = re.compile(r"(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)( [A-Z ]+)?;?")


@pytest.mark.parametrize("source", SOURCES, ids=_relative)
def test_transactions_are_spelled_in_one_place(source: Path) -> None:
    """A POST's transaction on the driver is opened, committed and rolled back by pokna.idempotency.keyed
    alone, so the protocol around it (the claim's hold, the release on failure, the refusals) is written
    once."""
    if _relative(source) in SPELLS_THE_TRANSACTION:
        return
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not _TRANSACTION_STATEMENT.fullmatch(node.value.strip()), (
                f"{_relative(source)} sends {node.value.strip()}: open the transaction with "
                "pokna.idempotency.keyed.transaction"
            )


# The HTTP edge: the kernel (api/), the assembly (app/) and every domain's routes (`routes.py`, `*_routes.py`).
EDGE_SOURCES = sorted(
    {
        *(PACKAGE / "api").rglob("*.py"),
        *(PACKAGE / "app").rglob("*.py"),
        *PACKAGE.rglob("routes.py"),
        *PACKAGE.rglob("*_routes.py"),
    }
)
# The request's session is opened, committed and closed by the one dependency that yields it.
SESSION_OWNERS = {"api/deps.py"}


def test_every_domain_s_routes_are_on_the_edge() -> None:
    domains_with_routes = {_part_of(_module_name(source)) for source in EDGE_SOURCES} - {"api", "app"}
    assert domains_with_routes == {"bundles", "dealer", "ledger", "public_log", "webhooks"}


@pytest.mark.parametrize("source", EDGE_SOURCES, ids=_relative)
def test_routes_never_touch_a_session(source: Path) -> None:
    if _relative(source) in SESSION_OWNERS:
        return
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert node.value.id != "session", f"{source.name} calls session.{node.attr}"
            assert (node.value.id, node.attr) != ("runtime", "sessions"), f"{source.name} opens a session"


# Each domain's own tables (pokna.db.models.<module>), and the named exception of docs/architecture.md.
OWN_TABLES = {
    "ledger": {"ledger", "tenant"},  # the one-statement account insert checks the tenant exists
    "dealer": {"game"},
    "tenants": {"tenant"},
    "idempotency": {"idempotency"},
    "outbox": {"webhook"},  # inserts its events; the webhooks part reads and delivers them
    "webhooks": {"webhook"},
    "public_log": {"game_log"},
    "db": {"base", "ledger", "tenant", "game", "game_log", "idempotency", "webhook"},
}


@pytest.mark.parametrize("source", SOURCES, ids=_relative)
def test_each_domain_reads_its_own_tables(source: Path) -> None:
    part = _part_of(_module_name(source))
    for imported in _pokna_imports(source):
        assert imported != "pokna.db.models" or part == "db", f"{_relative(source)} imports every table"
        if imported.startswith("pokna.db.models."):
            table_module = imported.split(".")[3]
            assert table_module in OWN_TABLES.get(part, set()), (
                f"{_relative(source)} imports {imported}: `{part}` reads another domain's tables"
            )


@pytest.mark.parametrize("source", EDGE_SOURCES, ids=_relative)
def test_routes_reach_domains_through_their_services(source: Path) -> None:
    for imported in _pokna_imports(source):
        assert not imported.startswith("pokna.db.models"), f"{source.name} imports {imported}"
        last = imported.rsplit(".", 1)[-1]
        assert not last.startswith(("repository", "store")), f"{source.name} imports {imported}"


# What the checks need, and nothing of the service's: no web framework, ORM, driver or PostgreSQL.
VERIFIER_MAY_IMPORT = {"pokna_verify", "cryptography", "py_arkworks_bls12381"}


@pytest.mark.parametrize(
    "source", sorted(VERIFIER.rglob("*.py")), ids=lambda source: source.relative_to(VERIFIER).as_posix()
)
def test_the_verifier_imports_only_itself_the_standard_library_and_what_its_checks_need(source: Path) -> None:
    import sys

    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in VERIFIER_MAY_IMPORT or top in sys.stdlib_module_names, (
                f"{source.relative_to(ROOT)} imports {name}: pokna-verify installs without the service's libraries"
            )


def _module_imports(source: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` a file imports, at any depth (function-local and TYPE_CHECKING imports
    count): `from pokna.x import y` names the module `pokna.x.y` when there is one, else `pokna.x`."""
    found: set[str] = set()
    for module, names in _imports(source):
        found.update(
            f"{module}.{name}" if f"{module}.{name}" in modules else module for name in names or [""]
        )
    return found & modules


def _tangles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one module: each a set of modules every one
    of which imports, directly or not, every other (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            if targets:
                target = targets.pop()
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(graph.get(target, ()))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycle_anywhere_in_the_service_or_the_verifier() -> None:
    """A module that needs one that needs it back is one module cut in two, or a layer upside down; a
    function-local import that breaks the cycle at run time hides it, so those count here too."""
    modules = {_module_name(source) for source in EVERY_SOURCE}
    graph = {
        _module_name(source): _module_imports(source, modules) - {_module_name(source)}
        for source in EVERY_SOURCE
    }
    tangles = _tangles(graph)
    assert not tangles, f"modules that import each other (directly or not): {[sorted(t) for t in tangles]}"


def test_function_local_and_relative_imports_count() -> None:
    text = "def late() -> None:\n    from pokna_verify.bundle.scan import scan\n    from . import lines\n"
    assert _imports_in(text, "pokna_verify.bundle.check", is_package=False) == [
        ("pokna_verify.bundle.scan", ["scan"]),
        ("pokna_verify.bundle", ["lines"]),
    ]
    assert _imports_in("from .. import game", "pokna_verify.fairness", is_package=True) == [
        ("pokna_verify", ["game"])
    ]


def test_the_cycle_finder_finds_cycles() -> None:
    assert _tangles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}}) == [
        {"a", "b", "c"},
        {"d", "e"},
    ]
    assert _tangles({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}) == []
    assert _tangles({"a": {"b"}, "b": {"a", "c"}, "c": {"b", "d"}, "d": set()}) == [{"a", "b", "c"}]


@functools.cache
def _document_types() -> frozenset[str]:
    """Names that look like modules and are documents' types (`pokna.audit.bundle`, a bundle's header):
    spelled as strings in the code."""
    return frozenset(
        node.value
        for source in EVERY_SOURCE
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"pokna(\.\w+)+", node.value)
    )


_NAMED_IN_BACKTICKS = re.compile(r"`((?:pokna|pokna_verify)(?:\.[A-Za-z_]+)+)(?::([A-Za-z_][A-Za-z_.]*))?`")


def _exists(dotted: str) -> bool:
    """`pokna.dealer.store_postgres` or `pokna.outbox.Gathered.record`: the longest module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("source", EVERY_SOURCE, ids=_shown)
def test_docstrings_name_real_modules(source: Path) -> None:
    """A module a docstring names in backticks (`pokna.dealer.store_postgres`, `pokna.dealer.action.locked:may_end`) exists,
    as the walk's references must: a rename that leaves the old name in a docstring fails here."""
    for node in ast.walk(ast.parse(source.read_text())):
        if not isinstance(node, (ast.Module, *_DEFINITIONS)):
            continue
        for dotted, attribute in _NAMED_IN_BACKTICKS.findall(ast.get_docstring(node) or ""):
            name = f"{dotted}.{attribute}" if attribute else dotted
            assert name in _document_types() or _exists(name), (
                f"{_shown(source)}: its docstring names `{name}`, which does not exist"
            )


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


SQL_SOURCES = sorted((PACKAGE / "sql").glob("*.sql"))
_NAMED_IN_SQL = re.compile(r"\b(pokna(?:_verify)?(?:\.[A-Za-z_]+)+)")


@pytest.mark.parametrize("source", SQL_SOURCES, ids=_shown)
def test_sql_comments_name_real_modules(source: Path) -> None:
    """The functions' sources name the Python that builds or calls them (`pokna.dealer.writes`) in their
    comments, where no docstring check reads: a module merged away would stay named there."""
    for line in source.read_text().splitlines():
        _code, dashes, comment = line.partition("--")
        for name in _NAMED_IN_SQL.findall(comment if dashes else ""):
            assert name in _document_types() or _exists(name), (
                f"{_shown(source)}: a comment names {name}, which does not exist"
            )
