"""Audit bundle verification at volume: a bundle of many games written offline (no database: the pure rules
play each game, the proofs are signed, the journal is hash-chained exactly as the service does), then
`pokna audit verify BUNDLE --keys KEYS --processes N` timed as a child process, `--repeat` times.

    .venv/bin/python bench/audit_bundle_volume.py --games 100000 --processes 2 --bundle /tmp/bundle.jsonl

With --bundle the bundle (and its key ring, BUNDLE.keys) is kept and reused by later runs: writing 100,000
games takes ~7 minutes here. Without it, both go to a temporary directory removed afterwards.

Memory is sampled from /proc every 100 ms over the command and its workers: the peak of their RSS added up
(shared pages counted in each process: an upper bound), the peak of their PSS added up (shared pages
shared out), and the largest peak RSS (VmHWM) of any one of them. CPU is user + system of the command and
its workers (wait4). --pokna runs another checkout's command on the same bundle (old against new).

--roll-kernel also times re-checking every roll of the bundle's proofs alone with
pokna_verify.fairness.protocol.faces on --processes processes (each worker recomputes its share of the games'
faces and compares them with the recorded ones), against roll(), the readable definition, on one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pokna_verify.bundle.records import account_record, chain_entry, end_record, game_record, header_document
from pokna_verify.crypto.signing import (
    generate_signing_key,
    load_private_key_pem,
    private_key_to_pem,
    sign_document,
)
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof import RecordedRoll, RollPurpose, SeatClientSeed, TransferRecord, build_proof
from pokna_verify.fairness.proof_replay import balance_cap, outcome_to_json, recorded_balances
from pokna_verify.fairness.protocol import faces, game_client_seed, roll
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from pokna_verify.game import (
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
from pokna_verify.game.actions import action_to_dict
from pokna_verify.game.events import Rolled
from pokna_verify.game.transfers import Pot, party_to_json
from pokna_verify.ledger.chain import GENESIS_HASH, document_hash, transaction_document

TENANT = "ten_bench"
FUNDING = "acct_" + "f" * 32
WALLETS = [f"acct_{index:032x}" for index in range(1, 201)]
STAKE, RAISE, PLAYERS = 5, 3, 3
# How often a survivor votes to roll again and a lone survivor challenges: mixed play by default; 0 and 0
# is one policy (claim, split), as bench/audit_report.py can ask for.
MIXED = (0.3, 0.4)
_key: Any = None
_chances = MIXED


def _init(pem: bytes, chances: tuple[float, float] = MIXED) -> None:
    global _key, _chances
    _key = load_private_key_pem(pem)
    _chances = chances


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
            action = Vote(seat, VoteChoice.ROLL_AGAIN if rng.random() < _chances[0] else VoteChoice.SPLIT)
        elif state.phase is Phase.LONE_SURVIVOR:
            action = Challenge(seat) if rng.random() < _chances[1] else Claim(seat)
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


def _bundle_lines(
    games: int, processes: int, pem: bytes, key: Any, chances: tuple[float, float]
) -> Iterator[dict[str, Any] | str]:
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
    with ProcessPoolExecutor(processes, initializer=_init, initargs=(pem, chances)) as pool:
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


def build(path: Path, games: int, processes: int, chances: tuple[float, float] = MIXED) -> None:
    """Write the bundle to `path` and its key ring to `path`.keys; `chances`: of a roll-again vote and of
    a challenge."""
    key = generate_signing_key()
    pem = private_key_to_pem(key)
    body = path.with_name(path.name + ".body")
    started = time.perf_counter()
    counts: dict[str, int] = {}
    with body.open("w") as out:
        for record in _bundle_lines(games, processes, pem, key, chances):
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
            first_prev_hash=GENESIS_HASH,
            last_hash=end_hash,
            chains=[
                chain_entry(
                    chain=0,
                    from_seq=1,
                    to_seq=end_seq,
                    first_prev_hash=GENESIS_HASH,
                    last_hash=end_hash,
                    transactions=end_seq,
                )
            ],
            transactions=end_seq,
            created_at="2026-12-01T00:00:00.000000Z",
        ),
        key,
    )
    ring = KeyRing.of(key.public_key()).to_json()
    Path(f"{path}.keys").write_text(json.dumps(ring))
    with path.open("w") as out:
        out.write(json.dumps(header) + "\n" + json.dumps({"type": "pokna.fairness.keys", **ring}) + "\n")
        with body.open() as source:
            for line in source:
                out.write(line)
        out.write(json.dumps(end_record(counts)) + "\n")
    body.unlink()
    print(
        f"wrote {games} games, {end_seq} transactions ({2 * end_seq} postings), "
        f"{path.stat().st_size / 2**20:.0f} MiB in {time.perf_counter() - started:.0f} s"
    )


@dataclass
class Measured:
    seconds: float
    cpu_seconds: float
    peak_tree_rss_mb: float
    peak_tree_pss_mb: float
    peak_process_mb: float
    report: dict[str, Any]
    output: str = ""


def measure(argv: list[str], *, answers_json: bool = True) -> Measured:
    """Run the command as a child process, sampling its process tree's memory every 100 ms; its stdout is
    read as JSON (`report`) unless `answers_json` is false (then it is kept as `output`)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(argv, stdout=output, env={**os.environ, "POKNA_TRACEBACK": "1"})
        rss = pss = hwm = 0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            members = _tree(process.pid)
            rss = max(rss, sum(_proc_kb(f"/proc/{member}/status", "VmRSS:") for member in members))
            pss = max(pss, sum(_proc_kb(f"/proc/{member}/smaps_rollup", "Pss:") for member in members))
            hwm = max([hwm, *(_proc_kb(f"/proc/{member}/status", "VmHWM:") for member in members)])
            time.sleep(0.1)
        seconds = time.perf_counter() - started
        output.seek(0)
        text = output.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{argv[1:3]} exited {code}: {text[-3000:]}")
    return Measured(
        seconds,
        usage.ru_utime + usage.ru_stime,
        rss / 1024,
        pss / 1024,
        hwm / 1024,
        json.loads(text) if answers_json else {},
        text,
    )


def _tree(root: int) -> list[int]:
    members, pending = [], [root]
    while pending:
        pid = pending.pop()
        members.append(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                pending.extend(int(child) for child in children.read_text().split())
            except OSError:
                continue
    return members


def _proc_kb(path: str, field: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def roll_kernel(path: Path, processes: int) -> None:
    """Every roll of the bundle's proofs re-checked by faces() on `processes` processes, and by roll() on one."""
    games = []
    with path.open("rb") as source:
        for line in source:
            if line.startswith(b'{"type":"game"'):
                proof = json.loads(line)["proof"]
                rolls = proof["rolls"]
                games.append(
                    (
                        proof["server_seed"],
                        proof["client_seed"],
                        [r["nonce"] for r in rolls],
                        [r["face"] for r in rolls],
                    )
                )
    total = sum(len(game[2]) for game in games)
    share = -(-len(games) // processes)
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_recheck, [games[:100]] * processes))  # workers started
        started = time.perf_counter()
        shares = list(pool.map(_recheck, [games[i : i + share] for i in range(0, len(games), share)]))
        fast = time.perf_counter() - started
    mismatches = sum(count for count, _ in shares)
    per_core = total / sum(cpu for _, cpu in shares)  # rolls per second of one core's CPU time
    sample = games[: len(games) // 10]
    started = time.process_time()
    for server_seed, client_seed, nonces, _faces in sample:
        for nonce in nonces:
            roll(server_seed, client_seed, nonce)
    readable = time.process_time() - started
    sample_rolls = sum(len(game[2]) for game in sample)
    if mismatches:
        raise SystemExit(f"{mismatches} rolls differ")
    print(
        f"roll kernel: {total} rolls of {len(games)} games re-checked by faces() on {processes} processes in "
        f"{fast:.2f} s: {total / fast:,.0f} rolls/s; per second of CPU time: faces() {per_core:,.0f} rolls, "
        f"roll() {sample_rolls / readable:,.0f} rolls (x{per_core * readable / sample_rolls:.1f}); "
        f"{processes} cores' worth of faces(): {processes * per_core:,.0f} rolls/s"
    )


def _recheck(games: list[tuple[str, str, list[int], list[int]]]) -> tuple[int, float]:
    started = time.process_time()
    mismatches = sum(
        faces(seed, client_seed, nonces) != recorded for seed, client_seed, nonces, recorded in games
    )
    return mismatches, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--bundle", type=Path, help="Keep the bundle here (and reuse it when it exists).")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pokna", default=str(Path(sys.executable).with_name("pokna")))
    parser.add_argument("--roll-kernel", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        bundle = args.bundle or Path(directory, "bundle.jsonl")
        if not bundle.exists():
            build(bundle, args.games, args.processes)
        print(f"uptime: {Path('/proc/loadavg').read_text().split()[:3]} (load average 1, 5, 15 min)")
        argv = [args.pokna, "audit", "verify", str(bundle), "--keys", f"{bundle}.keys", "--json"]
        for _ in range(args.repeat):
            run = measure([*argv, "--processes", str(args.processes)])
            report = run.report
            if report["verdict"] != "valid":
                raise SystemExit(f"verdict {report['verdict']}: {report['findings'][:5]}")
            games, seconds = sum(report["games"].values()), run.seconds
            print(
                f"verify: VALID in {seconds:.1f} s (CPU {run.cpu_seconds:.1f} s) with {args.processes} processes: "
                f"{games} games ({games / seconds:,.0f}/s), {report['postings']} postings "
                f"({report['postings'] / seconds:,.0f}/s), {report['rolls']} rolls ({report['rolls'] / seconds:,.0f}/s); "
                f"peak memory: {run.peak_tree_rss_mb:.0f} MB RSS of the process tree added up, "
                f"{run.peak_tree_pss_mb:.0f} MB PSS, {run.peak_process_mb:.0f} MB largest process"
            )
        if args.roll_kernel:
            roll_kernel(bundle, args.processes)
        print(f"uptime: {Path('/proc/loadavg').read_text().split()[:3]} (load average 1, 5, 15 min)")


if __name__ == "__main__":
    main()
