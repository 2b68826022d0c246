"""The tenant's chart of accounts as it knows it (issue 37, item 8): the funding and revenue accounts the
ledger keeps one per chain show as one account each, with the chains' parts as sub-accounts, in the trial
balance and in Beancount, without losing the per-chain detail."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from beancount import loader
from beancount.core import data
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.ledger import chain_for
from support.driver import export_beancount
from support.sessions import unit_of_work
from support.tenant_api import TenantApi, new_tenant


def _wallets_on_chains(api: TenantApi, chains: int) -> list[str]:
    """Wallets until `chains` different chains have one."""
    wallets: list[str] = []
    while len({chain_for(wallet) for wallet in wallets}) < chains:
        wallets.append(api.wallet())
    return wallets


def test_the_trial_balance_shows_one_funding_account_with_a_part_per_chain(
    client: TestClient, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    api = new_tenant(client, sessions)
    wallets = _wallets_on_chains(api, 5)
    funding_of_chain: dict[int, str] = {}
    for number, wallet in enumerate(wallets, start=1):
        answer = api.deposit(wallet, 10 * number)
        assert answer.status_code == 201, answer.text
        moved = answer.json()
        (funding,) = [
            posting["account_id"] for posting in moved["postings"] if posting["account_id"] != wallet
        ]
        funding_of_chain.setdefault(chain_for(wallet), funding)
        assert funding_of_chain[chain_for(wallet)] == funding  # one part per chain
    assert api.withdraw(wallets[0], 3).status_code == 201
    deposited = sum(10 * number for number in range(1, len(wallets) + 1)) - 3

    answer = api.get("/v1/ledger/trial-balance")
    assert answer.status_code == 200, answer.text
    trial = answer.json()
    assert trial["total"] == 0
    funding_lines = [line for line in trial["accounts"] if line["kind"] == "external_funding"]
    assert len(funding_lines) == 1, funding_lines
    (funding_line,) = funding_lines
    assert funding_line["external_id"] == "CREDIT"
    assert funding_line["balance"] == -deposited
    parts = funding_line["parts"]
    assert [part["chain"] for part in parts] == sorted(funding_of_chain)
    assert {part["chain"]: part["account_id"] for part in parts} == funding_of_chain
    assert funding_line["account_id"] == parts[0]["account_id"]
    by_chain = Counter[int]()
    for number, wallet in enumerate(wallets, start=1):
        by_chain[chain_for(wallet)] -= 10 * number
    by_chain[chain_for(wallets[0])] += 3
    assert {part["chain"]: part["balance"] for part in parts} == dict(by_chain)
    wallet_lines = {line["account_id"]: line for line in trial["accounts"] if line["kind"] == "player_wallet"}
    assert set(wallet_lines) == set(wallets)
    assert all(line["parts"] == [] for line in wallet_lines.values())
    # Every account of the ledger is in the chart exactly once: as a line, or as a part of one.
    listed = [line["account_id"] for line in trial["accounts"] if not line["parts"]]
    listed += [part["account_id"] for line in trial["accounts"] for part in line["parts"]]
    assert len(listed) == len(set(listed)) == len(wallets) + len(funding_of_chain)

    # Beancount adds the parts up under their parent, and says which chain each is.
    path = tmp_path / "books.beancount"
    with unit_of_work(sessions) as session, path.open("w", encoding="utf-8") as handle:
        handle.writelines(export_beancount(session, api.tenant_id))
    entries, errors, _ = loader.load_file(str(path))
    assert errors == []
    opened = [entry for entry in entries if isinstance(entry, data.Open)]
    funding_opens = [entry for entry in opened if entry.account.startswith("Equity:Pokna:ExternalFunding:")]
    assert sorted(int(entry.meta["chain"]) for entry in funding_opens) == sorted(funding_of_chain)
    assert all("chain" not in entry.meta for entry in opened if entry not in funding_opens)
