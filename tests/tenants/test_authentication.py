"""pokna.tenants.authentication is the one place an API key is checked: the statement is spelled nowhere
else in the service, and the process's memory of a key's tenant never lets a revoked key through. (Over
HTTP, on every kind of route: tests/api/test_api_tenancy.py.)"""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

import pokna
from pokna.errors import Unauthorized
from pokna.runtime import Runtime
from pokna.tenants import authentication
from support.driver import new_api_key, revoke_api_key

PACKAGE = Path(pokna.__file__).parent
THE_PLACE = PACKAGE / "tenants" / "authentication.py"
_READS_API_KEY = re.compile(r"\b(FROM|JOIN)\s+api_key\b.*\bsecret_sha256\b", re.IGNORECASE | re.DOTALL)


def _looks_a_key_up(node: ast.AST) -> bool:
    """SQL that reads `api_key` by a key's digest (a tenant's keys listed by tenant are no check), or a
    comparison or filter on a key's digest (ORM or Core)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(_READS_API_KEY.search(node.value))
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        return any(isinstance(side, ast.Attribute) and side.attr == "secret_sha256" for side in sides)
    if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == "ApiKey"):
        return any(keyword.arg == "secret_sha256" for keyword in node.keywords)  # a new key's row aside
    return False


@pytest.mark.parametrize(
    "source", sorted(PACKAGE.rglob("*.py")), ids=lambda source: source.relative_to(PACKAGE).as_posix()
)
def test_a_key_is_looked_up_in_one_place(source: Path) -> None:
    if source == THE_PLACE:
        return
    found = [
        getattr(node, "lineno", 0)
        for node in ast.walk(ast.parse(source.read_text()))
        if _looks_a_key_up(node)
    ]
    assert not found, (
        f"{source.relative_to(PACKAGE)} looks an API key up (lines {found}): check it through "
        "pokna.tenants.authentication"
    )


def test_the_place_is_found_by_the_check() -> None:
    assert any(_looks_a_key_up(node) for node in ast.walk(ast.parse(THE_PLACE.read_text())))


def test_a_remembered_tenant_never_authenticates_a_revoked_key(
    runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    issued = new_api_key(sessions, "Maz's Castle")
    tenant_id = issued.tenant_id
    digest = authentication.key_digest(issued.secret)
    undone: list[str] = []

    async def undo(remembered: str) -> None:
        undone.append(remembered)

    async def checked() -> tuple[str | None, str]:
        async with runtime.aio.connection() as connection:
            async with connection.pipeline():
                key_check = await authentication.check(connection, digest)
            return key_check.remembered, await key_check.tenant(undo)

    assert asyncio.run(checked()) == (None, tenant_id)  # not remembered yet: checked on its own
    assert asyncio.run(checked()) == (tenant_id, tenant_id)  # remembered, and checked beside it
    assert undone == []
    revoke_api_key(sessions, issued.key_id)
    with pytest.raises(Unauthorized):
        asyncio.run(checked())
    assert undone == [tenant_id]  # what was sent under the remembered tenant is taken back first
    with pytest.raises(Unauthorized):  # and the key is forgotten: nothing is sent under a tenant for it
        asyncio.run(checked())
    assert undone == [tenant_id]


def test_a_read_beside_the_check_is_sent_again_under_the_keys_own_tenant(
    runtime: Runtime, sessions: sessionmaker[Session]
) -> None:
    """`read_beside` answers what was read under the key's tenant only: not remembered yet, the read is
    sent once the check has answered; remembered, beside it; remembered wrong (a memory that is only a
    hint), sent again under the key's own; revoked, refused."""
    issued = new_api_key(sessions, "Jabba's Palace")
    tenant_id = issued.tenant_id
    digest = authentication.key_digest(issued.secret)

    async def read() -> tuple[str, list[str]]:
        asked: list[str] = []
        async with runtime.aio.connection() as connection:

            async def queue(tenant: str) -> object:
                asked.append(tenant)
                return await connection.execute("SELECT %(tenant)s", {"tenant": tenant})

            found, _ = await authentication.read_beside(connection, digest, queue)
            return found, asked

    assert asyncio.run(read()) == (tenant_id, [tenant_id])  # not remembered: sent after the check
    assert asyncio.run(read()) == (tenant_id, [tenant_id])  # remembered: beside it
    authentication._REMEMBERED[digest] = "ten_elsewhere"
    assert asyncio.run(read()) == (tenant_id, ["ten_elsewhere", tenant_id])
    assert authentication._REMEMBERED[digest] == tenant_id
    revoke_api_key(sessions, issued.key_id)
    with pytest.raises(Unauthorized):
        asyncio.run(read())
