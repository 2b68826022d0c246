"""An audit bundle made from games played over HTTP passes every check; the API and the
CLI write it, refuse bad ranges naming the field, and keep to the tenant's own books."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

import pokna.cli.ledger
import pokna.dealer.action.rules_step
from pokna import ledger
from pokna.db.models.ledger import Account
from pokna_verify.bundle.check import CHECKS
from pokna_verify.bundle.report import Verdict
from pokna_verify.bundle.scan import verify_bundle
from pokna_verify.ledger.chain import chain_for
from support.audit_bundles import lines_of, play_books, records
from support.game_play import FINAL, Api, new_tenant_key, obliging, play
from support.ledger_reads import system_balance
from support.verify_cli import VerifyCli

runner = CliRunner()


def test_a_bundle_of_played_games_passes_every_check(
    verify_cli: VerifyCli, client: TestClient, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    books = play_books(client, sessions)
    lines = books.bundle()
    kinds = [record["type"] for record in records(lines)]
    assert kinds[:2] == ["pokna.audit.bundle", "pokna.fairness.keys"]
    assert kinds[-1] == "end"
    assert kinds.count("pokna.ledger.checkpoint") == 2

    report = verify_bundle(lines, keys=books.key_ring)
    assert report.findings == [], report.to_json()
    assert report.verdict is Verdict.VALID
    assert report.checks == list(CHECKS)
    assert sum(report.games.values()) == kinds.count("game") >= 4
    assert report.rolls > 0
    assert report.transaction_kinds["deposit"] == 4
    assert report.transaction_kinds["withdrawal"] == 1
    assert report.kind_changes["game_pot"] == {"CREDIT": 0}
    # Every credit that came in is in a wallet or went out again.
    assert report.kind_changes["player_wallet"] == {"CREDIT": 4 * 400 - 7}

    bundle, keys = tmp_path / "bundle.jsonl", tmp_path / "keys.json"
    bundle.write_text("".join(lines))
    keys.write_text(json.dumps(books.key_ring.to_json()))
    answer = verify_cli("audit", "verify", str(bundle), "--keys", str(keys), "--processes", "2")
    assert answer.exit_code == 0, answer.output
    assert answer.output.rstrip().endswith("VALID")
    as_json = verify_cli("audit", "verify", str(bundle), "--keys", str(keys), "--json")
    assert json.loads(as_json.output)["verdict"] == "valid"


def test_the_rake_is_money_that_followed_the_dice_and_the_operators_result(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    books = play_books(client, sessions, games=4, rake={"bps": 1000, "cap": 2})
    lines = books.bundle()
    report = verify_bundle(lines, keys=books.key_ring)
    assert report.findings == [], report.to_json()
    assert report.verdict is Verdict.VALID
    rakes = [record for record in records(lines) if record.get("kind") == "rake"]
    assert rakes
    assert report.transaction_kinds["rake"] == len(rakes)
    taken = sum(
        posting["amount"] for record in rakes for posting in record["postings"] if posting["amount"] > 0
    )
    assert report.kind_changes["revenue"] == {"CREDIT": taken}
    assert report.house_result == {"CREDIT": taken}
    assert report.kind_changes["player_wallet"] == {"CREDIT": 4 * 400 - 7 - taken}

    # A rake paid to a wallet instead of the revenue account is money that did not follow the dice.
    wallet = next(
        posting["account_id"]
        for record in records(lines)
        if record.get("kind") == "deposit"
        for posting in record["postings"]
        if posting["amount"] > 0
    )
    documents = records(lines)
    for document in documents:
        if document.get("kind") == "rake":
            for posting in document["postings"]:
                if posting["amount"] > 0:
                    posting["account_id"] = wallet
            break
    tampered = verify_bundle(lines_of(documents), keys=books.key_ring)
    assert tampered.verdict is Verdict.INVALID
    assert any("rake" in finding.problem for finding in tampered.findings), tampered.to_json()


def test_a_bundle_over_part_of_the_range_still_checks_the_games_inside_it(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    books = play_books(client, sessions, games=4)
    whole = records(books.bundle())
    game_seqs: dict[str, list[tuple[int, int]]] = {}
    for record in whole:
        if record["type"] == "transaction" and "game_id" in record["metadata"]:
            game_seqs.setdefault(record["metadata"]["game_id"], []).append((record["chain"], record["seq"]))
    # From inside a game to before its last transfer, on its chain.
    seqs = next(seqs for seqs in game_seqs.values() if len(seqs) > 2)
    (chain, start), (_, end) = seqs[1], seqs[-2]
    middle = books.bundle(chain=chain, from_seq=start, to_seq=end)
    report = verify_bundle(middle, keys=books.key_ring)
    assert report.findings == [], report.to_json()
    assert [(entry["chain"], entry["from_seq"], entry["to_seq"]) for entry in report.chains] == [
        (chain, start, end)
    ]
    assert {record["chain"] for record in records(middle) if record["type"] == "transaction"} == {chain}
    assert any("the rest come after it" in note for note in report.notes)
    # The range starts inside a game: its record says how many of its transfers came before.
    assert any(record.get("transfers_before", 0) > 0 for record in records(middle))
    transactions = sorted(
        (record for record in whole if record["type"] == "transaction"),
        key=lambda record: record["created_at"],
    )
    fifth = transactions[4]  # the fifth written, on whichever chain
    by_time = books.bundle(from_time=fifth["created_at"], to_time=transactions[-1]["created_at"])
    header = records(by_time)[0]
    # Per chain: from the first transaction written at or after from_time.
    held = {
        (record["chain"], record["seq"]) for record in records(by_time) if record["type"] == "transaction"
    }
    assert held == {
        (record["chain"], record["seq"])
        for record in transactions
        if record["created_at"] >= fifth["created_at"]
    }
    assert header["transactions"] == len(held)
    assert verify_bundle(by_time, keys=books.key_ring).findings == []


def test_bad_ranges_are_422_problems_naming_the_field(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    api = Api(client, new_tenant_key(sessions))
    for params, field in (
        ({"from_seq": 0}, "query.from_seq"),
        ({"from_seq": 5, "to_seq": 2}, "query.to_seq"),
        ({"from_seq": 1, "from_time": "2026-01-01T00:00:00Z"}, "query.from_time"),
        ({"from_time": "2026-02-01T00:00:00Z", "to_time": "2026-01-01T00:00:00Z"}, "query.to_time"),
        ({"to_time": "yesterday"}, "query.to_time"),
        ({"to_time": "0.0"}, "query.to_time"),  # a number is not a date-time (found by schemathesis)
        ({"from_time": "1764597600"}, "query.from_time"),
    ):
        response = api.get("/v1/audit/bundle", **params)
        assert response.status_code == 422, (params, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert [param["name"] for param in response.json()["invalid_params"]] == [field]


def test_a_bundle_holds_only_the_tenants_own_books(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    books = play_books(client, sessions, games=2)
    other = Api(client, new_tenant_key(sessions, "Chalmun's"))
    other.wallet(25)
    theirs = records(_bundle(other))
    assert {record["tenant_id"] for record in theirs if "tenant_id" in record} == {theirs[0]["tenant_id"]}
    assert theirs[0]["transactions"] == 1
    mine = {record.get("game_id") for record in records(books.bundle())}
    assert not mine & {record.get("game_id") for record in theirs} - {None}


def _bundle(api: Api) -> list[str]:
    response = api.get("/v1/audit/bundle")
    assert response.status_code == 200, response.text
    return response.text.splitlines(keepends=True)


def test_a_game_still_in_play_leaves_the_verdict_not_revealed(
    verify_cli: VerifyCli, client: TestClient, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(100) for _ in range(3)]
    game = api.create_game(wallets[0], wallets[1:], stake=5)
    api.ok(api.act(game["id"], {"type": "start", "account_id": wallets[0]}))
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text("".join(_bundle(api)))
    report = verify_bundle(bundle.read_text().splitlines(), keys=api.key_ring())
    assert report.findings == []
    assert report.unrevealed_games == [game["id"]]
    answer = verify_cli("audit", "verify", str(bundle))
    assert answer.exit_code == 3, answer.output
    assert "NOT REVEALED" in answer.output


def test_a_checkpoint_moved_past_the_next_record_is_found(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """The checkpoint still follows its transaction, only not right after it: the contract says right
    after, and a reordered record is a finding (found by the tampering property test, 2026-12-01)."""
    books = play_books(client, sessions, games=4)
    lines = books.bundle()
    kinds = [record["type"] for record in records(lines)]
    moved = 0
    for index, kind in enumerate(kinds[:-1]):
        # With chains the record after a checkpoint may be the next transaction (on its chain or the next
        # chain's) as often as an account or a game: moved past any of them, it is no longer right after.
        if kind == "pokna.ledger.checkpoint" and kinds[index + 1] in ("account", "game", "transaction"):
            changed = list(lines)
            changed[index], changed[index + 1] = changed[index + 1], changed[index]
            report = verify_bundle(changed, keys=books.key_ring)
            assert report.verdict is Verdict.INVALID
            assert [(f.line, f.record) for f in report.findings] == [(index + 2, "pokna.ledger.checkpoint")]
            moved += 1
    assert moved >= 1


def test_a_client_that_accepts_only_bytes_gets_the_same_bundle_labelled_as_bytes(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Generated clients that know no JSON Lines (openapi-python-client) ask for octet-stream: same bytes."""
    api = Api(client, new_tenant_key(sessions))
    api.wallet(25)
    as_lines = client.get("/v1/audit/bundle", headers=api.headers)
    as_bytes = client.get("/v1/audit/bundle", headers={**api.headers, "Accept": "application/octet-stream"})
    either = client.get(
        "/v1/audit/bundle",
        headers={**api.headers, "Accept": "application/x-ndjson, application/octet-stream"},
    )
    assert as_lines.headers["content-type"].startswith("application/x-ndjson")
    assert either.headers["content-type"].startswith("application/x-ndjson")
    assert as_bytes.headers["content-type"] == "application/octet-stream"
    header_lines = [records(response.text.splitlines(keepends=True))[0] for response in (as_lines, as_bytes)]
    assert header_lines[0]["transactions"] == header_lines[1]["transactions"] == 1


def test_deposits_and_rakes_post_against_the_sub_account_of_their_chain_and_the_bundle_sums_them(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """Over HTTP (the async paths: pokna.ledger.moving, pokna.dealer.action.action_transaction): a deposit or
    withdrawal posts against the funding sub-account of its wallet's chain, a rake to the revenue
    sub-account of its game's chain; the bundle verifies and its summary sums the sub-accounts by kind."""
    books = play_books(client, sessions, games=4, rake={"bps": 1000, "cap": 2})
    lines = books.bundle()
    report = verify_bundle(lines, keys=books.key_ring)
    assert report.findings == [], report.to_json()
    assert report.kind_changes["external_funding"] == {"CREDIT": -(4 * 400 - 7)}
    documents = records(lines)
    tenant_id = documents[0]["tenant_id"]
    with sessions() as session:
        external_ids = {
            account.id: (account.kind, account.external_id)
            for account in session.scalars(select(Account).where(Account.tenant_id == tenant_id))
        }
        assert system_balance(session, tenant_id, "external_funding") == -(4 * 400 - 7)
        assert system_balance(session, tenant_id, "revenue") == report.kind_changes["revenue"]["CREDIT"]
    funding_used, revenue_used = set(), set()
    for document in documents:
        if document.get("kind") in ("deposit", "withdrawal"):
            (wallet,) = [
                p["account_id"]
                for p in document["postings"]
                if external_ids[p["account_id"]][0] == "player_wallet"
            ]
            (funding,) = [p["account_id"] for p in document["postings"] if p["account_id"] != wallet]
            assert document.get("chain", 0) == chain_for(wallet)
            assert external_ids[funding] == (
                "external_funding",
                ledger.system_external_id("CREDIT", chain_for(wallet)),
            )
            funding_used.add(funding)
        elif document.get("kind") == "rake":
            (revenue,) = [p["account_id"] for p in document["postings"] if p["amount"] > 0]
            chain = chain_for(document["reference"])
            assert external_ids[revenue] == ("revenue", ledger.system_external_id("CREDIT", chain))
            revenue_used.add(revenue)
    # Four wallets' deposits: as many funding sub-accounts as the wallets have distinct chains.
    assert len(funding_used) == len({external_ids[f][1] for f in funding_used}) >= 1
    assert revenue_used


def test_a_range_bundle_of_a_game_in_play_across_the_chains_upgrade_is_valid(
    client: TestClient, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37, item 7: a game in play when the journal got its chains (migration 0014) has its first
    transfers on chain 0, where everything was before, and the rest on its own chain. A bundle from after
    the upgrade counted only the game's transfers on its own chain as those before the range, and called
    honest books INVALID. The placement of before the upgrade is reproduced by placing this game's
    transfers on chain 0 until the upgrade."""
    api = Api(client, new_tenant_key(sessions))
    wallets = [api.wallet(400) for _ in range(3)]
    game = api.create_game(wallets[0], wallets[1:], stake=5, challenge_raise=3)
    while chain_for(game["id"]) == 0:  # a game whose own chain is not chain 0 (15 in 16 are not)
        game = api.create_game(wallets[0], wallets[1:], stake=5, challenge_raise=3)
    own_chain = chain_for(game["id"])

    def before_chains(key: str) -> int:
        return 0

    with monkeypatch.context() as before_the_upgrade:
        before_the_upgrade.setattr(pokna.dealer.action.rules_step, "chain_for", before_chains)
        before_the_upgrade.setattr(ledger, "chain_for", before_chains)
        game = api.ok(api.act(game["id"], obliging(game)))  # the start: every seat's stake into the pot
        assert game["status"] not in FINAL
    play([api], game, obliging)

    whole = records(api_bundle(api))
    of_game = [
        record
        for record in whole
        if record["type"] == "transaction" and record["metadata"].get("game_id") == game["id"]
    ]
    assert {record["chain"] for record in of_game} == {0, own_chain}
    after = [record for record in of_game if record["chain"] == own_chain]
    by_time = api_bundle(api, from_time=after[0]["created_at"])
    report = verify_bundle(by_time, keys=api.key_ring())
    assert report.findings == [], report.to_json()
    assert report.verdict is Verdict.VALID
    game_record = next(record for record in records(by_time) if record.get("type") == "game")
    assert game_record["transfers_before"] == len(of_game) - len(after)
    alone = api_bundle(api, chain=own_chain)
    assert verify_bundle(alone, keys=api.key_ring()).findings == []
    assert verify_bundle(api_bundle(api), keys=api.key_ring()).verdict is Verdict.VALID


def api_bundle(api: Api, **params: object) -> list[str]:
    response = api.get("/v1/audit/bundle", **params)
    assert response.status_code == 200, response.text
    return response.text.splitlines(keepends=True)
