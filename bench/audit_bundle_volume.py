"""Audit bundle verification at volume: a bundle of many games written offline (no database: the pure rules
play each game, the proofs are signed, the journal is hash-chained exactly as the service does), then
`pokna audit verify BUNDLE --keys KEYS` timed, with its peak memory.

    .venv/bin/python bench/audit_bundle_volume.py --games 100000 --processes 2

The bundle and the key ring are written to a temporary directory and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from pokna.audit.records import account_record, end_record, game_record, header_document
from pokna.crypto.signing import generate_signing_key, load_private_key_pem, private_key_to_pem, sign_document
from pokna.fairness.keyring import KeyRing
from pokna.fairness.proof import RecordedRoll, RollPurpose, SeatClientSeed, TransferRecord, build_proof
from pokna.fairness.proof_replay import balance_cap, outcome_to_json, recorded_balances
from pokna.fairness.protocol import faces, game_client_seed
from pokna.fairness.terms import GameTerms, SeatAccount
from pokna.game import (
    POT,
    Challenge,
    Claim,
    GameConfig,
    Phase,
    Roll,
    Start,
    Vote,
    VoteChoice,
    new_game,
    step,
    turn,
)
from pokna.game.actions import action_to_dict
from pokna.game.events import Rolled
from pokna.game.transfers import Pot, party_to_json
from pokna.ledger.chain import GENESIS_HASH, document_hash, transaction_document

TENANT = "ten_bench"
FUNDING = "acct_" + "f" * 32
WALLETS = [f"acct_{index:032x}" for index in range(1, 201)]
STAKE, RAISE, PLAYERS = 5, 3, 3
_key: Any = None


def _init(pem: bytes) -> None:
    global _key
    _key = load_private_key_pem(pem)


def _game(index: int) -> tuple[str, str, dict[str, Any], list[tuple[str, str, str, int]], int]:
    """One game played by the pure rules: its id, pot, signed proof, transfers between accounts, rolls."""
    rng = random.Random(index)
    game_id, pot = f"game_{index:032x}", f"acct_{index + 10**9:032x}"
    accounts = rng.sample(WALLETS, PLAYERS + 1)
    server_seed = f"{rng.getrandbits(256):064x}"
    seeds = [f"seed{index}x{seat}" for seat in range(PLAYERS + 1)]
    client_seed = game_client_seed(seeds)
    state = new_game(GameConfig.create(stake=STAKE, challenge_raise=RAISE, player_count=PLAYERS))
    balances = dict.fromkeys(range(PLAYERS + 1), 10**6)
    cap = balance_cap(STAKE, RAISE, PLAYERS)
    actions, rolls, transfers, moves = [], [], [], []
    while not state.is_over:
        now = turn(state)
        seat = now.seats[0]
        if state.phase is Phase.OPEN:
            action: Any = Start(seat)
        elif state.phase is Phase.VOTING:
            action = Vote(seat, VoteChoice.ROLL_AGAIN if rng.random() < 0.3 else VoteChoice.SPLIT)
        elif state.phase is Phase.LONE_SURVIVOR:
            action = Challenge(seat) if rng.random() < 0.4 else Claim(seat)
        else:
            action = Roll(seat)
        result = step(
            state, action, balances=balances, roll_face=lambda n: faces(server_seed, client_seed, [n])[0]
        )
        actions.append({**action_to_dict(action), "balances": recorded_balances(balances, cap)})
        for event in result.events:
            if isinstance(event, Rolled):
                purpose = RollPurpose(event.purpose.value)
                rolls.append(
                    RecordedRoll.of(event.nonce, event.seat, accounts[event.seat], purpose, event.face)
                )
        for transfer in result.transfers:
            payer, payee = party_to_json(transfer.payer), party_to_json(transfer.payee)
            transfers.append(TransferRecord(transfer.kind.value, payer, payee, transfer.amount))
            if not isinstance(transfer.payer, int | Pot) or not isinstance(transfer.payee, int | Pot):
                raise SystemExit("this bench plays without a rake: no revenue party")
            moves.append(
                (
                    transfer.kind.value,
                    pot if transfer.payer is POT else accounts[transfer.payer],
                    pot if transfer.payee is POT else accounts[transfer.payee],
                    transfer.amount,
                )
            )
            if isinstance(transfer.payer, int):
                balances[transfer.payer] -= transfer.amount
            if isinstance(transfer.payee, int):
                balances[transfer.payee] += transfer.amount
        state = result.state
    proof = build_proof(
        game_id=game_id,
        server_seed=server_seed,
        client_seeds=[
            SeatClientSeed(seat, accounts[seat], seeds[seat], "player") for seat in range(PLAYERS + 1)
        ],
        terms=GameTerms.of(
            STAKE, RAISE, [SeatAccount(seat, account) for seat, account in enumerate(accounts)]
        ),
        rolls=rolls,
        actions=actions,
        outcome=outcome_to_json(state.outcome),
        transfers=transfers,
        private_key=_key,
    )
    return game_id, pot, proof, moves, len(rolls)


def _chunk(indices: range) -> list[tuple[str, str, dict[str, Any], list[tuple[str, str, str, int]], int]]:
    return [_game(index) for index in indices]


def _bundle_lines(games: int, processes: int, pem: bytes, key: Any) -> Iterator[dict[str, Any] | str]:
    seq, prev = 0, GENESIS_HASH

    def transaction(
        kind: str, reference: str | None, metadata: dict[str, Any], legs: list[tuple[str, int]]
    ) -> str:
        nonlocal seq, prev
        seq += 1
        document = transaction_document(
            seq=seq,
            prev_hash=prev,
            tenant_id=TENANT,
            transaction_id=f"txn_{seq:032x}",
            kind=kind,
            reference=reference,
            metadata=metadata,
            created_at="2026-12-01T00:00:00.000000Z",
            postings=[(account, amount, "CREDIT") for account, amount in legs],
        )
        prev = document_hash(document)
        return json.dumps({"type": "transaction", **document, "hash": prev}, separators=(",", ":"))

    yield account_record(FUNDING, "external_funding", "CREDIT")
    for wallet in WALLETS:
        yield account_record(wallet, "player_wallet", "CREDIT")
        yield transaction("deposit", None, {}, [(FUNDING, -(10**9)), (wallet, 10**9)])
    with ProcessPoolExecutor(processes, initializer=_init, initargs=(pem,)) as pool:
        chunks = [range(start, min(start + 500, games)) for start in range(0, games, 500)]
        for chunk in pool.map(_chunk, chunks):
            for game_id, pot, proof, moves, _rolls in chunk:
                yield account_record(pot, "game_pot", "CREDIT")
                yield game_record(
                    game_id=game_id,
                    status=_status(proof),
                    pot_account_id=pot,
                    transfers_before=0,
                    proof=proof,
                )
                for kind, payer, payee, amount in moves:
                    yield transaction(
                        kind, game_id, {"game_id": game_id}, [(payer, -amount), (payee, amount)]
                    )
            checkpoint = {
                "type": "pokna.ledger.checkpoint",
                "tenant_id": TENANT,
                "seq": seq,
                "hash": prev,
                "created_at": "2026-12-01T00:00:00.000000Z",
            }
            yield sign_document(checkpoint, key)
    yield {"end_seq": seq, "end_hash": prev}


def _status(proof: dict[str, Any]) -> str:
    return "cancelled" if proof["outcome"]["reason"] == "cancelled" else "settled"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    key = generate_signing_key()
    pem = private_key_to_pem(key)
    with tempfile.TemporaryDirectory() as directory:
        body, bundle, keys = (
            Path(directory, "body"),
            Path(directory, "bundle.jsonl"),
            Path(directory, "keys.json"),
        )
        started = time.perf_counter()
        counts: dict[str, int] = {}
        first_prev = GENESIS_HASH
        with body.open("w") as out:
            for record in _bundle_lines(args.games, args.processes, pem, key):
                if isinstance(record, dict) and "end_seq" in record:
                    end_seq, end_hash = record["end_seq"], record["end_hash"]
                    continue
                text = record if isinstance(record, str) else json.dumps(record, separators=(",", ":"))
                kind = "transaction" if isinstance(record, str) else record["type"]
                counts[kind] = counts.get(kind, 0) + 1
                out.write(text + "\n")
        header = sign_document(
            header_document(
                tenant_id=TENANT,
                from_seq=1,
                to_seq=end_seq,
                first_prev_hash=first_prev,
                last_hash=end_hash,
                transactions=end_seq,
                created_at="2026-12-01T00:00:00.000000Z",
            ),
            key,
        )
        ring = KeyRing.of(key.public_key()).to_json()
        keys.write_text(json.dumps(ring))
        with bundle.open("w") as out:
            out.write(json.dumps(header) + "\n" + json.dumps({"type": "pokna.fairness.keys", **ring}) + "\n")
            with body.open() as source:
                for line in source:
                    out.write(line)
            out.write(json.dumps(end_record(counts)) + "\n")
        body.unlink()
        if os.environ.get("KEEP_BUNDLE"):
            import shutil

            shutil.copy(bundle, os.environ["KEEP_BUNDLE"])
            shutil.copy(keys, os.environ["KEEP_BUNDLE"] + ".keys")
        size = bundle.stat().st_size
        print(
            f"wrote {args.games} games, {end_seq} transactions ({2 * end_seq} postings), {size / 2**20:.0f} MiB "
            f"in {time.perf_counter() - started:.0f} s"
        )
        pokna = Path(sys.executable).with_name("pokna")
        started = time.perf_counter()
        answer = subprocess.run(
            [
                str(pokna),
                "audit",
                "verify",
                str(bundle),
                "--keys",
                str(keys),
                "--json",
                "--processes",
                str(args.processes),
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "POKNA_TRACEBACK": "1"},
        )
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if answer.returncode != 0:
            print(answer.stdout[-3000:], answer.stderr[-3000:])
            raise SystemExit(f"verify exited {answer.returncode}")
        report = json.loads(answer.stdout)
        games = sum(report["games"].values())
        print(
            f"verify: {report['verdict'].upper()} in {seconds:.1f} s with {args.processes} processes: "
            f"{games} games ({games / seconds:,.0f}/s), {report['postings']} postings "
            f"({report['postings'] / seconds:,.0f}/s), {report['rolls']} rolls ({report['rolls'] / seconds:,.0f}/s), "
            f"peak memory {peak:.0f} MB (largest process)"
        )


if __name__ == "__main__":
    main()
