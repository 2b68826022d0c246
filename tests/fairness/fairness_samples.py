"""A realistic signed proof and keys shared by the fairness tests (deterministic, so failures reproduce)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path as FilePath
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna_verify.fairness.beacon import (
    QUICKNET,
    BeaconChain,
    BeaconRound,
    beacon_roll,
    format_timestamp_ms,
    round_published_at_ms,
)
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.proof import RecordedRoll, RollPurpose, SeatClientSeed, TransferRecord, build_proof
from pokna_verify.fairness.proof_replay import balance_cap, outcome_to_json, recorded_balances
from pokna_verify.fairness.protocol import game_client_seed, roll, server_seed_hash
from pokna_verify.fairness.receipt import build_commitment_receipt
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from pokna_verify.game import (
    Action,
    Challenge,
    GameConfig,
    Phase,
    Roll,
    Start,
    Vote,
    VoteChoice,
    action_to_dict,
    new_game,
    turn,
)
from pokna_verify.game import step as engine_step
from pokna_verify.game.events import Rolled
from pokna_verify.game.transfers import party_to_json

CHECK_SERVER_SEED = "5d5c1ae0f3b7d8ab1a6c3e6f6b4e2d9a0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a59"
CHECK_SERVER_SEED_HASH = "861e71aae3914702057bf23c67148ff7bf08956965cd1b6f3d48792fa5875587"
GAME_ID = "game-0001"

SEED_B = (
    "7c5d3bc613611eb1c9844baf2a63c8f3f0371890caa869971736e3e1b0195de4"  # sha256("pokna test vector seed B")
)
GAME_CLIENT_SEED_B = (
    "3aca9319b4b5040aacac6263d3c89ae176c0392d5839e53cc2b372545346ec6f"  # vigo-seed, alice.1, bob_~-2
)

# (server seed, game client seed, nonce, f, face, colour): the same table is in docs/fairness.md.
VECTORS = [
    (CHECK_SERVER_SEED, "pokna-client", 0, "0.2409662576392293", 2, "red"),
    (CHECK_SERVER_SEED, "pokna-client", 1, "0.017791770631447434", 1, "red"),
    (CHECK_SERVER_SEED, "pokna-client", 2, "0.009487502975389361", 1, "red"),
    (CHECK_SERVER_SEED, "pokna-client", 3, "0.5079281881917268", 4, "blue"),
    (CHECK_SERVER_SEED, "pokna-client", 255, "0.9503746908158064", 6, "blue"),
    (CHECK_SERVER_SEED, "pokna-client", 256, "0.3093701181933284", 2, "red"),
    (CHECK_SERVER_SEED, "pokna-client", 1000, "0.08149614976719022", 1, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 0, "0.020052955951541662", 1, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 1, "0.45009276270866394", 3, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 5, "0.22619571560062468", 2, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 255, "0.09087231406010687", 1, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 256, "0.5023851392325014", 4, "blue"),
    (SEED_B, GAME_CLIENT_SEED_B, 4095, "0.35045653744600713", 3, "red"),
    (SEED_B, GAME_CLIENT_SEED_B, 65536, "0.7418651850894094", 5, "blue"),
    (SEED_B, GAME_CLIENT_SEED_B, 1000000, "0.37705379631370306", 3, "red"),
]

OLD_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
NEW_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32, 64)))
STRANGER_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(64, 96)))
KEY_RING = KeyRing.of(NEW_KEY.public_key(), retired=[OLD_KEY.public_key()])

TERMS = GameTerms.of(
    stake=100,
    challenge_raise=50,
    seats=[SeatAccount(0, "acct-vigo"), SeatAccount(1, "acct-alice"), SeatAccount(2, "acct-bob")],
)
CLIENT_SEEDS = [
    SeatClientSeed(0, "acct-vigo", "vigo-seed", "player"),
    SeatClientSeed(1, "acct-alice", "alice.1", "player"),
    SeatClientSeed(2, "acct-bob", "Srv_generated-0001", "server"),
]
BALANCE = 10_000

_QUICKNET_FIXTURE = json.loads(
    (FilePath(__file__).parents[1] / "fixtures" / "drand_quicknet_rounds.json").read_text()
)
# quicknet's /info document as drand publishes it (v2 spelling: chain_hash, scheme).
QUICKNET_INFO: dict[str, Any] = _QUICKNET_FIXTURE["info"]
# Real quicknet rounds (tests/fixtures/drand_quicknet_rounds.json), by round number.
QUICKNET_ROUNDS = {entry["round"]: BeaconRound(**entry) for entry in _QUICKNET_FIXTURE["rounds"]}
# The beacon sample's drawing actions use rounds 1000, 1001, ... in turn, each accepted this long before
# its round was published (so that round is the first one after the acceptance).
ACCEPTED_BEFORE_ROUND_MS = 1_500


def _play_sample_game(
    server_seed: str, beacon: Callable[[int], BeaconRound] | None = None, chain: BeaconChain = QUICKNET
) -> tuple[list[RecordedRoll], list[dict[str, Any]], dict[str, Any], list[TransferRecord]]:
    """Play a real game through the rules engine with the protocol's rolls: roll when asked, challenge when
    alone, vote split. The proof is then exactly what the service would publish, so the replay check passes.

    With `beacon` (the k-th drawing action's round), rolls are beacon-mode rolls: each drawing action is
    accepted ACCEPTED_BEFORE_ROUND_MS before its round is published on `chain`."""
    config = GameConfig.create(stake=TERMS.stake, challenge_raise=TERMS.challenge_raise, player_count=2)
    client_seed = game_client_seed([entry.client_seed for entry in CLIENT_SEEDS])
    accounts = {seat.seat: seat.account_id for seat in TERMS.seats}
    balances = dict.fromkeys(config.seats, BALANCE)
    cap = balance_cap(config.stake, config.challenge_raise, config.player_count)
    state = new_game(config)
    rolls: list[RecordedRoll] = []
    actions: list[dict[str, Any]] = []
    transfers: list[TransferRecord] = []
    drawing_actions = 0
    while not state.is_over:
        now = turn(state)
        seat = now.seats[0]
        action: Action
        if state.phase is Phase.OPEN:
            action = Start(seat)
        elif state.phase is Phase.LONE_SURVIVOR:
            action = Challenge(seat)
        elif state.phase is Phase.VOTING:
            action = Vote(seat, VoteChoice.SPLIT)
        else:
            action = Roll(seat)
        record = {**action_to_dict(action), "balances": recorded_balances(balances, cap)}
        drawn = beacon(drawing_actions) if beacon is not None else None
        accepted_at = (
            format_timestamp_ms(round_published_at_ms(chain, drawn.round) - ACCEPTED_BEFORE_ROUND_MS)
            if drawn is not None
            else None
        )

        def roll_face(nonce: int, drawn: BeaconRound | None = drawn) -> int:
            if drawn is None:
                return roll(server_seed, client_seed, nonce).face
            return beacon_roll(server_seed, client_seed, nonce, drawn.randomness).face

        result = engine_step(state, action, balances=balances, roll_face=roll_face)
        for event in result.events:
            if isinstance(event, Rolled):
                rolls.append(
                    RecordedRoll.of(
                        event.nonce,
                        event.seat,
                        accounts[event.seat],
                        RollPurpose(event.purpose.value),
                        event.face,
                        accepted_at=accepted_at,
                        beacon=drawn,
                    )
                )
        drawing_actions += any(isinstance(event, Rolled) for event in result.events)
        for transfer in result.transfers:
            if transfer.into_pot:
                balances[transfer.seat] -= transfer.amount
            else:
                balances[transfer.seat] += transfer.amount
            transfers.append(
                TransferRecord(
                    transfer.kind.value,
                    party_to_json(transfer.payer),
                    party_to_json(transfer.payee),
                    transfer.amount,
                )
            )
        actions.append(record)
        state = result.state
    return rolls, actions, outcome_to_json(state.outcome), transfers


def sample_rolls(server_seed: str = CHECK_SERVER_SEED) -> list[RecordedRoll]:
    return _play_sample_game(server_seed)[0]


def sample_proof(private_key: Ed25519PrivateKey = NEW_KEY) -> dict[str, Any]:
    rolls, actions, outcome, transfers = _play_sample_game(CHECK_SERVER_SEED)
    return build_proof(
        game_id=GAME_ID,
        server_seed=CHECK_SERVER_SEED,
        client_seeds=CLIENT_SEEDS,
        terms=TERMS,
        rolls=rolls,
        actions=actions,
        outcome=outcome,
        transfers=transfers,
        private_key=private_key,
    )


def sample_receipt(private_key: Ed25519PrivateKey = NEW_KEY) -> dict[str, Any]:
    return build_commitment_receipt(
        game_id=GAME_ID,
        server_seed_hash=server_seed_hash(CHECK_SERVER_SEED),
        created_at="2025-01-01T12:00:00Z",
        terms=GameTerms.of(TERMS.stake, TERMS.challenge_raise, TERMS.seats[:1]),
        private_key=private_key,
    )


def quicknet_round(drawing_action: int) -> BeaconRound:
    return QUICKNET_ROUNDS[1000 + drawing_action]


def sample_beacon_proof(
    private_key: Ed25519PrivateKey = NEW_KEY,
    chain: BeaconChain = QUICKNET,
    beacon: Callable[[int], BeaconRound] = quicknet_round,
) -> dict[str, Any]:
    """The sample game played in beacon mode on real quicknet rounds 1000, 1001, ... (or on `chain`)."""
    rolls, actions, outcome, transfers = _play_sample_game(CHECK_SERVER_SEED, beacon, chain)
    return build_proof(
        game_id=GAME_ID,
        server_seed=CHECK_SERVER_SEED,
        client_seeds=CLIENT_SEEDS,
        terms=TERMS,
        rolls=rolls,
        actions=actions,
        outcome=outcome,
        transfers=transfers,
        private_key=private_key,
        beacon_chain=chain,
    )


def sample_beacon_receipt(
    private_key: Ed25519PrivateKey = NEW_KEY, chain: BeaconChain = QUICKNET
) -> dict[str, Any]:
    return build_commitment_receipt(
        game_id=GAME_ID,
        server_seed_hash=server_seed_hash(CHECK_SERVER_SEED),
        created_at="2023-08-23T15:09:27Z",
        terms=GameTerms.of(TERMS.stake, TERMS.challenge_raise, TERMS.seats[:1]),
        private_key=private_key,
        beacon_chain=chain,
    )


Path = tuple[str | int, ...]


def leaf_paths(value: object, prefix: Path = ()) -> Iterator[Path]:
    """Every scalar inside `value`, as a path of keys and indexes."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaf_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaf_paths(item, (*prefix, index))
    else:
        yield prefix


def get_at(document: Any, path: Path) -> Any:
    for step in path:
        document = document[step]
    return document


def altered(value: object) -> object:
    """A different value of the same JSON type, so the document still parses."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        if not value:
            return "x"
        last = value[-1]
        replacement = "1" if last == "0" else "0" if last.isdigit() else "b" if last == "a" else "a"
        return value[:-1] + replacement
    raise AssertionError(f"unexpected leaf {value!r}")


def with_leaf(document: dict[str, Any], path: Path, new_value: object) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    parent = get_at(changed, path[:-1])
    parent[path[-1]] = new_value
    return changed


# Every check a verifier reports, in order (docs/fairness.md, "Checks"): the CLI, the page and the Python
# verifier name the same ten.
CHECKS = (
    "protocol",
    "commitment",
    "client_seed_format",
    "client_seed",
    "seats",
    "nonces",
    "rolls",
    "signature",
    "receipt",
    "replay",
)
