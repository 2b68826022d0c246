"""Exports of a journal spread over several hash chains: every chain in (chain, seq) order, each line naming
its chain first, a `chain` range, seqs without one being chain 0's, and Beancount opening balances per chain.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from beancount import loader
from beancount.core import data
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.errors import InvalidRequest
from pokna.ledger import chain_for, verify_export
from support.driver import export_beancount, export_csv, export_jsonl, open_account
from support.game_play import Api, new_tenant_key
from support.ledger_reads import trial_balance
from support.money import Teller
from support.portable_export import journal_groups, transaction_line
from support.sessions import unit_of_work

pytest_plugins = ["ledger_fixtures"]

BEAN_CHECK = Path(sys.executable).with_name("bean-check")


def _spread(sessions: sessionmaker[Session], teller: Teller, wallets: int = 10, rounds: int = 3) -> list[str]:
    """Deposits to `wallets` wallets, the first of them on chain 0 (each wallet's on its own chain,
    chain_for(wallet id)), `rounds` each, then two withdrawals from the first (chain 0)."""
    with unit_of_work(sessions) as session:
        opened: list[str] = []
        while not any(chain_for(wallet) == 0 for wallet in opened) or len(opened) < wallets:
            opened.append(open_account(session, tenant_id=teller.tenant_id, kind="player_wallet").id)
    first = next(wallet for wallet in opened if chain_for(wallet) == 0)
    ids = [first, *[wallet for wallet in opened if wallet != first][: wallets - 1]]

    async def moves() -> None:
        for round_ in range(rounds):
            for wallet in ids:
                await teller.deposit(wallet, 10 + round_)
        await teller.withdraw(first, 3)
        await teller.withdraw(first, 1)

    teller.run(moves())
    return ids


def _jsonl(sessions: sessionmaker[Session], tenant_id: str, **bounds: int) -> list[str]:
    with unit_of_work(sessions) as session:
        return list(export_jsonl(session, tenant_id, **bounds))


def _positions(lines: list[str]) -> list[tuple[int, int]]:
    return [(line["chain"], line["seq"]) for line in map(json.loads, lines)]


@pytest.mark.citus
def test_an_export_holds_every_chain_in_chain_and_seq_order_and_verifies(
    sessions: sessionmaker[Session], teller: Teller
) -> None:
    tenant_id = teller.tenant_id
    wallets = _spread(sessions, teller)
    lines = _jsonl(sessions, tenant_id)
    assert len(lines) == 10 * 3 + 2
    assert all(line.startswith('{"chain" : ') for line in lines)
    positions = _positions(lines)
    assert positions == sorted(positions)
    chains = {chain_for(wallet) for wallet in wallets}
    assert 0 in chains
    assert {chain for chain, _ in positions} == chains
    assert len(chains) > 2
    for chain in chains:  # each chain whole, from seq 1
        seqs = [seq for on, seq in positions if on == chain]
        assert seqs == list(range(1, len(seqs) + 1))
    report = verify_export(lines)
    assert report.valid, report.findings
    assert report.transactions == len(lines)
    assert sum(report.trial_balance().values()) == 0
    with sessions() as session:  # the store's lines are the journal's rows, on every chain
        assert [json.loads(line) for line in lines] == [
            transaction_line(tenant_id, group) for group in journal_groups(session, tenant_id)
        ]


def test_a_range_is_one_chains_and_seqs_alone_are_refused_naming_chain(
    sessions: sessionmaker[Session], teller: Teller
) -> None:
    tenant_id = teller.tenant_id
    wallets = _spread(sessions, teller)
    chain = next(chain_for(wallet) for wallet in wallets if chain_for(wallet) != 0)
    whole = _positions(_jsonl(sessions, tenant_id))
    on_chain = [position for position in whole if position[0] == chain]
    assert _positions(_jsonl(sessions, tenant_id, chain=chain)) == on_chain
    assert _positions(_jsonl(sessions, tenant_id, chain=chain, from_seq=2, to_seq=3)) == [
        (chain, 2),
        (chain, 3),
    ]
    assert _positions(_jsonl(sessions, tenant_id, chain=chain, from_seq=len(on_chain) + 1)) == []
    # Seqs without a chain were chain 0's, as when chain 0 was the only chain: an incremental reader asking
    # from_seq alone silently got chain 0 and nothing else (issue 37, item 7). Now refused, naming chain.
    for bounds in ({"from_seq": 2}, {"to_seq": 1}, {"from_seq": 1, "to_seq": 3}):
        with pytest.raises(InvalidRequest) as refused:
            _jsonl(sessions, tenant_id, **bounds)
        assert [param["name"] for param in refused.value.extensions["invalid_params"]] == ["query.chain"]
    assert _positions(_jsonl(sessions, tenant_id, chain=0, to_seq=1)) == [(0, 1)]
    # One chain's export verifies on its own.
    assert verify_export(_jsonl(sessions, tenant_id, chain=chain)).valid

    with unit_of_work(sessions) as session:
        rows = list(csv.DictReader(io.StringIO("".join(export_csv(session, tenant_id, chain=chain)))))
        table = "".join(export_csv(session, tenant_id))
    assert table.splitlines()[0].startswith("chain,seq,transaction_id,")
    assert {(int(row["chain"]), int(row["seq"])) for row in rows} == set(on_chain)
    assert len(rows) == 2 * len(on_chain)


def test_the_export_route_refuses_a_chain_that_is_not_one_naming_it(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = Api(client, new_tenant_key(sessions))
    for chain in (-1, 16):
        answer = api.get("/v1/ledger/export", chain=chain)
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert [param["name"] for param in answer.json()["invalid_params"]] == ["query.chain"]
    wallet = api.wallet(25)
    asked = [("/v1/ledger/export", {"format": kind}) for kind in ("jsonl", "csv", "beancount")]
    for path, params in [*asked, ("/v1/audit/bundle", {})]:
        for bounds in ({"from_seq": 1}, {"to_seq": 1}):
            answer = api.get(path, **params, **bounds)  # a 422 before the stream begins, in every format
            assert answer.status_code == 422, answer.text
            assert [param["name"] for param in answer.json()["invalid_params"]] == ["query.chain"]
            assert "positions on one chain" in answer.json()["detail"]
    answer = api.get("/v1/ledger/export", chain=chain_for(wallet))
    assert answer.status_code == 200
    assert _positions(answer.text.splitlines()) == [(chain_for(wallet), 1)]


def test_a_range_that_ends_before_it_starts_is_refused_naming_to_seq(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Swapped bounds are a mistake, not an empty chain: the export answered 200 with nothing, where the
    audit bundle refused the same bounds."""
    api = Api(client, new_tenant_key(sessions))
    chain = chain_for(api.wallet(25))
    asked = [("/v1/ledger/export", {"format": kind}) for kind in ("jsonl", "csv", "beancount")]
    for path, params in [*asked, ("/v1/audit/bundle", {})]:
        answer = api.get(path, **params, chain=chain, from_seq=2, to_seq=1)
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert [param["name"] for param in answer.json()["invalid_params"]] == ["query.to_seq"]
    answer = api.get("/v1/ledger/export", chain=chain, from_seq=1, to_seq=1)
    assert _positions(answer.text.splitlines()) == [(chain, 1)]


def _bean_balances(path: Path) -> dict[str, int]:
    entries, errors, _options = loader.load_file(str(path))
    assert errors == []
    totals: dict[str, Decimal] = {}
    for entry in entries:
        if isinstance(entry, data.Transaction):
            for posting in entry.postings:
                assert posting.units is not None
                assert posting.units.number is not None
                totals[posting.account] = totals.get(posting.account, Decimal(0)) + posting.units.number
    return {name.rsplit(":", 1)[1].replace("Acct-", "acct_"): int(total) for name, total in totals.items()}


def _beancount(sessions: sessionmaker[Session], tenant_id: str, path: Path, **bounds: Any) -> str:
    with unit_of_work(sessions) as session, path.open("w", encoding="utf-8") as handle:
        handle.writelines(export_beancount(session, tenant_id, **bounds))
    checked = subprocess.run([str(BEAN_CHECK), str(path)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return path.read_text()


def test_beancount_opens_each_chain_with_its_own_balances_before_it(
    sessions: sessionmaker[Session], teller: Teller, tmp_path: Path
) -> None:
    tenant_id = teller.tenant_id
    wallets = _spread(sessions, teller)
    whole = _beancount(sessions, tenant_id, tmp_path / "whole.beancount")
    # Every chain to its head: the stored balances, of the wallets (those opened and not used too) and of
    # each chain's funding sub-account.
    with unit_of_work(sessions) as session:
        accounts = trial_balance(session, tenant_id).accounts
    funding = [account for account in accounts if account.kind == "external_funding"]
    assert len(funding) == len({chain_for(wallet) for wallet in wallets})
    assert whole.count(" balance ") == len(accounts)
    assert '  chain: "0"\n  seq: "1"\n' in whole

    chain = next(chain_for(wallet) for wallet in wallets if chain_for(wallet) != 0)
    tail = tmp_path / "tail.beancount"
    text = _beancount(sessions, tenant_id, tail, chain=chain, from_seq=2)
    assert f'"opening balances before chain {chain} seq 2"' in text
    assert " balance " not in text  # the other chains are not in it: the stored balances count them
    # What the file adds up to: exactly the chain's own postings, the opening ones included.
    moved: dict[str, int] = {}
    for line in map(json.loads, _jsonl(sessions, tenant_id, chain=chain)):
        for posting in line["postings"]:
            moved[posting["account_id"]] = moved.get(posting["account_id"], 0) + posting["amount"]
    balances = _bean_balances(tail)
    assert {account: balances.get(account, 0) for account in moved} == moved

    zero = _beancount(sessions, tenant_id, tmp_path / "zero.beancount", chain=0, from_seq=2)
    assert '"opening balances before seq 2"' in zero
