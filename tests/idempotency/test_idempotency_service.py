"""`pokna.idempotency.service` below HTTP: claims, fencing, release and purge on one session."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from pokna.db.engine import unit_of_work
from pokna.db.models.idempotency import IdempotencyRecord
from pokna.db.types import utc_now
from pokna.errors import IdempotencyKeyReused, IdempotencyRequestInProgress
from pokna.idempotency import service
from pokna.tenants.service import create_tenant


@pytest.fixture
def tenant_id(sessions: sessionmaker[Session]) -> str:
    with unit_of_work(sessions) as session:
        return create_tenant(session, "Chalmun's").id


def _request(tenant_id: str, key: str = "k", fingerprint: str = "f" * 64) -> service.KeyedRequest:
    return service.KeyedRequest(tenant_id=tenant_id, key=key, fingerprint=fingerprint)


def _records(sessions: sessionmaker[Session]) -> dict[str, tuple[str, int | None]]:
    with unit_of_work(sessions) as session:
        rows = session.scalars(select(IdempotencyRecord)).all()
        return {row.key: (row.claim_token, row.response_status) for row in rows}


def test_the_work_runs_once_and_its_answer_is_replayed(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    runs: list[int] = []

    def work(_session: Session, _attempt: service.Attempt) -> tuple[int, Any]:
        runs.append(1)
        return 201, {"id": "acct_1", "note": "caf\u00e9 \u0000"}

    with unit_of_work(sessions) as session:
        first = service.run_once(session, _request(tenant_id), work)
    with unit_of_work(sessions) as session:
        again = service.run_once(session, _request(tenant_id), work)
    assert runs == [1]
    assert (first.replayed, again.replayed) == (False, True)
    assert (again.status, again.body) == (first.status, first.body)
    with unit_of_work(sessions) as session, pytest.raises(IdempotencyKeyReused):
        service.run_once(session, _request(tenant_id, fingerprint="0" * 64), work)


def test_a_failed_work_releases_its_claim(sessions: sessionmaker[Session], tenant_id: str) -> None:
    def refused(_session: Session, _attempt: service.Attempt) -> tuple[int, Any]:
        raise IdempotencyRequestInProgress("stand-in for any refusal")

    with unit_of_work(sessions) as session, pytest.raises(IdempotencyRequestInProgress):
        service.run_once(session, _request(tenant_id), refused)
    assert _records(sessions) == {}


def test_a_claim_nobody_holds_is_taken_over_at_once_and_fences_the_old_token_out(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    request = _request(tenant_id)
    with unit_of_work(sessions) as session:
        assert service.claim(session, request, "old-token") is None
    # The old request died before its work committed (or has not reached `hold` yet): no lock on the
    # claim, so a retry takes it over now, not after a lease.
    with unit_of_work(sessions) as session:
        assert service.claim(session, request, "new-token") is None

    with unit_of_work(sessions) as session, pytest.raises(IdempotencyRequestInProgress):
        service.hold(session, request, "old-token")
    with unit_of_work(sessions) as session:
        service.release(session, request, "old-token")  # the old request's release frees nothing of the new
    assert _records(sessions) == {"k": ("new-token", None)}
    with unit_of_work(sessions) as session:
        service.release(session, request, "new-token")
    assert _records(sessions) == {}


def test_purge_deletes_only_records_past_their_retention(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    for key in ("old", "new"):
        with unit_of_work(sessions) as session:
            service.run_once(session, _request(tenant_id, key=key), _empty_answer)
    with unit_of_work(sessions) as session:
        record = session.get(IdempotencyRecord, (tenant_id, "old"))
        assert record is not None
        record.expires_at = utc_now() - timedelta(seconds=1)
    with unit_of_work(sessions) as session:
        assert service.purge_expired(session, utc_now()) == 1
    assert set(_records(sessions)) == {"new"}


def _empty_answer(_session: Session, _attempt: service.Attempt) -> tuple[int, Any]:
    return 200, {}


def test_a_retry_of_an_interrupted_attempt_is_told_when_it_began(
    sessions: sessionmaker[Session], tenant_id: str
) -> None:
    attempts: list[service.Attempt] = []

    def work(_session: Session, attempt: service.Attempt) -> tuple[int, Any]:
        attempts.append(attempt)
        return 200, {}

    with unit_of_work(sessions) as session:
        service.run_once(session, _request(tenant_id, key="fresh"), work)
    began = utc_now() - timedelta(seconds=7)
    with unit_of_work(sessions) as session:  # a first attempt claimed 7 s ago, then its process died
        assert service.claim(session, _request(tenant_id, key="cut"), "dead-token") is None
    with unit_of_work(sessions) as session:
        record = session.get(IdempotencyRecord, (tenant_id, "cut"))
        assert record is not None
        record.created_at = began
    with unit_of_work(sessions) as session:
        service.run_once(session, _request(tenant_id, key="cut"), work)
    assert [attempt.interrupted_at for attempt in attempts] == [None, began]
    assert _records(sessions)["cut"][1] == 200
