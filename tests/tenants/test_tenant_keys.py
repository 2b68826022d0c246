from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from pokna.cli.app import app
from pokna.db.models.tenant import ApiKey
from pokna.errors import NotFound, Unauthorized
from pokna.settings import get_settings
from pokna.tenants.authentication import key_digest
from support.driver import create_tenant, issue_api_key, revoke_api_key
from support.key_checks import tenant_of_key


def test_issued_key_authenticates_its_tenant_and_only_a_digest_is_stored(
    sessions: sessionmaker[Session],
) -> None:
    tenant = create_tenant(sessions, "Mos Eisley Cantina")
    issued = issue_api_key(sessions, tenant.id)
    assert tenant_of_key(sessions, key_digest(issued.secret)) == tenant.id
    with sessions() as session:
        stored = session.scalars(select(ApiKey)).one()
        assert stored.secret_sha256 == hashlib.sha256(issued.secret.encode()).hexdigest()
        dump = " ".join(str(row) for row in session.execute(text("SELECT * FROM api_key")))
        assert issued.secret not in dump


def test_revoked_and_unknown_keys_are_refused_alike(sessions: sessionmaker[Session]) -> None:
    tenant = create_tenant(sessions, "Jabba's Palace")
    first = issue_api_key(sessions, tenant.id)
    second = issue_api_key(sessions, tenant.id)
    revoked = revoke_api_key(sessions, first.key_id)
    assert revoked.revoked_at is not None
    assert revoke_api_key(sessions, first.key_id) == revoked  # revoked once: its time stays
    with pytest.raises(Unauthorized):
        tenant_of_key(sessions, key_digest(first.secret))
    with pytest.raises(Unauthorized):
        tenant_of_key(sessions, key_digest("pk_not-a-key"))
    assert tenant_of_key(sessions, key_digest(second.secret)) == tenant.id


def test_keys_for_an_unknown_tenant_are_refused(sessions: sessionmaker[Session]) -> None:
    with pytest.raises(NotFound):
        issue_api_key(sessions, "ten_missing")
    with pytest.raises(NotFound):
        revoke_api_key(sessions, "key_missing")


def test_cli_creates_tenant_and_key_then_revokes_it(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POKNA_DATABASE_URL", database_url)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        created = runner.invoke(app, ["tenants", "create", "Chalmun's", "--json"])
        assert created.exit_code == 0, created.output
        import json

        payload = json.loads(created.stdout)
        assert payload["api_key"].startswith("pk_")
        listed = runner.invoke(app, ["tenants", "keys", "list", payload["tenant_id"]])
        assert payload["key_id"] in listed.output
        assert "active" in listed.output
        revoked = runner.invoke(app, ["tenants", "keys", "revoke", payload["key_id"]])
        assert revoked.exit_code == 0
        assert "revoked" in runner.invoke(app, ["tenants", "keys", "list", payload["tenant_id"]]).output
        # an id that does not exist is a wrong argument: exit 2, as README says
        assert runner.invoke(app, ["tenants", "keys", "revoke", "key_nope"]).exit_code == 2
    finally:
        get_settings.cache_clear()
