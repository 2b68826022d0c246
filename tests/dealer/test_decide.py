"""`decide` on games built by hand, with a fixed `Env`: no database, no clock, no randomness of its own.

Each table row is a game as locked (pokna.dealer.action.locked.LockedGame), what is asked of it, and the outcome
the transaction would match on (pokna.dealer.action.decision.Decision), with its contents.
"""

from __future__ import annotations

import base64
import copy
import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pokna.dealer.action.decision import Act, CatchUp, Decision, PendingBeaconRound, Refused, Written, decide
from pokna.dealer.action.locked import Clock, Env, LockedGame, NeedsRead
from pokna.dealer.beacon_rolls import RollPending
from pokna.dealer.creating import NewGame, NewRecords, new_game_records
from pokna.dealer.errors import ActionRefused, ClientSeedLocked, NotSeated, VersionConflict
from pokna.dealer.records import GameRecord, SeatRecord
from pokna.dealer.requests import (
    CancelAction,
    ClaimAction,
    PlayerRequest,
    RollAction,
    SetClientSeedAction,
    StartAction,
)
from pokna.dealer.writes import GameStep
from pokna.service_keys import ServiceKeys
from pokna_verify.fairness.beacon import QUICKNET, BeaconChain
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.protocol import server_seed_hash
from pokna_verify.fairness.seed_vault import seal_server_seed
from pokna_verify.game import GameConfig

SIGNING = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
KEYS = ServiceKeys(SIGNING, KeyRing.of(SIGNING.public_key()), bytes(32))
CREATED_AT = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
TTL = timedelta(minutes=10)
ACCOUNTS = ["acct_vigo", "acct_p1", "acct_p2"]
SEED_BYTES = bytes(range(16))
SERVER_SEED = "02" * 32
"""Its rolls, with the seeds the env fixes: the favor red, player 1 blue (out), player 2 red (the lone
survivor)."""
SERVER_CHOSEN_SEED = base64.urlsafe_b64encode(SEED_BYTES).rstrip(b"=").decode()


def fixed_env(now: datetime) -> Env:
    """Ids numbered per prefix, the same 16 bytes every time, and the moment given."""
    counters: dict[str, itertools.count[int]] = {}

    def new_id(prefix: str) -> str:
        return f"{prefix}_{next(counters.setdefault(prefix, itertools.count(1)))}"

    def random_bytes(size: int) -> bytes:
        return (SEED_BYTES * (size // 16 + 1))[:size]

    return Env(now, new_id, random_bytes)


def locked(
    *,
    at: datetime = CREATED_AT + timedelta(seconds=5),
    chain: BeaconChain | None = None,
    balances: dict[str, int] | None = None,
    recorded: bool = True,
    rake_bps: int = 0,
    revenue_account: str | None = None,
) -> LockedGame:
    """A new game of two players at stake 10, as the lock would read it, `at` the request's moment."""
    game, seats = _new_game(chain, rake_bps)
    return LockedGame(
        game,
        tuple(seats),
        dict.fromkeys(ACCOUNTS, 100) if balances is None else balances,
        KEYS,
        Clock(at, TTL),
        ([], []) if recorded else None,
        revenue_account,
    )


@functools.cache
def _new_game(chain: BeaconChain | None, rake_bps: int = 0) -> tuple[GameRecord, list[SeatRecord]]:
    """Created once, its server seed SERVER_SEED: every table row decides on a copy."""
    terms = NewGame(ACCOUNTS[0], ACCOUNTS[1:], stake=10)
    config = GameConfig(stake=10, challenge_raise=10, player_count=2, rake_bps=rake_bps)
    created = Clock(CREATED_AT, TTL)
    game, seats, _ = new_game_records(
        KEYS, created, "ten_1", NewRecords(terms, config, chain), "game_1", "acct_pot"
    )
    sealed = seal_server_seed(SERVER_SEED, KEYS.seed_key, game.id)
    return replace(game, sealed_server_seed=sealed, server_seed_hash=server_seed_hash(SERVER_SEED)), seats


def played(*requests: PlayerRequest, **options: Any) -> LockedGame:
    """The same game once `requests` were decided on it, in order."""
    game = locked(**options)
    for request in requests:
        decision = decide(game, Act(request), fixed_env(game.clock.now))
        assert isinstance(decision, Written)
        game = decision.locked
    return game


def started(**options: Any) -> LockedGame:
    """Seeking favor, player 1's roll."""
    return played(_start(), **options)


def lone_survivor(**options: Any) -> LockedGame:
    """Player 1 out, player 2 in favor: claim or challenge."""
    return played(_start(), _roll("acct_p1"), _roll("acct_p2"), **options)


def cancelled() -> LockedGame:
    return played(CancelAction(type="cancel"))


def settled() -> LockedGame:
    """Player 2, the lone survivor, claimed the pot."""
    return played(
        _start(), _roll("acct_p1"), _roll("acct_p2"), ClaimAction(type="claim", account_id="acct_p2")
    )


def _seed(account_id: str) -> PlayerRequest:
    return SetClientSeedAction(type="set_client_seed", account_id=account_id, client_seed="mine")


def _roll(account_id: str) -> PlayerRequest:
    return RollAction(type="roll", account_id=account_id)


def _start() -> PlayerRequest:
    return StartAction(type="start", account_id="acct_vigo")


def _no_writes(decision: Decision) -> None:
    assert isinstance(decision, Written | PendingBeaconRound)
    writes = decision.writes if isinstance(decision, Written) else decision.kept
    assert not writes


def check_start(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    answer = decision.answer.model()
    assert (answer.status, answer.phase.value, answer.version, answer.pot) == (
        "in_progress",
        "seeking",
        2,
        20,
    )
    assert [roll.purpose for roll in answer.rolls] == ["favor"]
    assert [seat.client_seed for seat in answer.seats] == [SERVER_CHOSEN_SEED] * 3
    (step,) = decision.writes.steps
    assert step.batch is not None
    assert [row["id"] for row in decision.writes.outbox.rows] == ["msg_1", "msg_2"]
    assert decision.writes.transactions == 2  # two antes, their ids the env's
    assert decision.timed_out == ()


def check_roll(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    assert decision.answer.model().version == 3
    assert [(roll.seat, roll.color, roll.in_favor) for roll in decision.answer.model().rolls] == [
        (1, "blue", False)
    ]
    assert decision.writes.steps[0].batch is None  # no money moves on a roll


def check_claim_raked(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    assert decision.answer.model().status == "settled"
    (step,) = decision.writes.steps
    moves = [(row["payer"], row["payee"], row["amount"]) for row in _money(step)]
    assert moves == [("pot", "revenue", 1), ("pot", 2, 19)]


def _money(step: GameStep) -> list[Mapping[str, Any]]:
    return [money.payload for money in step.money]


def check_client_seed(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    assert decision.answer.model().version == 2
    assert decision.answer.model().seats[1].client_seed == "mine"
    assert decision.answer.model().rolls == []
    assert [row["type"] for row in decision.writes.outbox.rows] == ["game.turn"]


def refused(kind: type[Exception], code: str) -> Callable[[Decision], None]:
    def check(decision: Decision) -> None:
        assert isinstance(decision, Refused)
        assert isinstance(decision.refusal, kind)
        assert decision.refusal.code == code

    return check


def check_cancelled(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    assert decision.answer.model().status == "cancelled"
    (step,) = decision.writes.steps
    assert step.game["revealed_server_seed"] == SERVER_SEED
    assert step.game["proof"] is not None
    assert step.batch is None  # nothing was ante'd: nothing moves


def _is(decision: Decision, expected: Decision) -> None:
    assert decision == expected


def check_proof_read(decision: Decision) -> None:
    _is(decision, NeedsRead("recorded"))


def check_timed_out_catch_up(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is None
    assert [(entry["applied"], entry["deadline_at"]) for entry in decision.timed_out] == [
        ("cancel", "2026-12-06T12:10:00Z")
    ]
    assert [row["type"] for row in decision.writes.outbox.rows] == ["game.turn_timed_out", "game.cancelled"]


def check_acted_after_deadline(decision: Decision) -> None:
    assert isinstance(decision, Refused)
    assert decision.refusal.code == "game_over"
    assert decision.refusal.detail.startswith("the turn timed out before this action (applied: cancel")
    assert len(decision.refusal.extensions["timed_out"]) == 1


def check_beacon_accepted(decision: Decision) -> None:
    assert isinstance(decision, Written)
    assert decision.answer is not None
    assert decision.answer.model().rolls == []
    assert decision.writes.accepted_round is not None
    pending = decision.answer.model().fairness.pending_roll
    assert pending is not None
    assert pending.accepted_at == "2026-12-06T12:00:05.000Z"  # env.now, not a clock of its own


LATE = CREATED_AT + TTL + timedelta(seconds=1)

CASES: list[tuple[str, Callable[[], LockedGame], Any, Callable[[Decision], None]]] = [
    ("start", locked, Act(_start()), check_start),
    (
        "set a client seed",
        locked,
        Act(SetClientSeedAction(type="set_client_seed", account_id="acct_p1", client_seed="mine")),
        check_client_seed,
    ),
    (
        "not seated",
        locked,
        Act(RollAction(type="roll", account_id="acct_x")),
        refused(NotSeated, "not_seated"),
    ),
    (
        "a stale version",
        locked,
        Act(StartAction(type="start", account_id="acct_vigo", expected_version=7)),
        refused(VersionConflict, "conflict"),
    ),
    (
        "not your turn",
        started,
        Act(RollAction(type="roll", account_id="acct_p2")),
        refused(ActionRefused, "not_your_turn"),
    ),
    (
        "start refused: a player cannot pay",
        lambda: locked(balances={"acct_vigo": 100, "acct_p1": 100, "acct_p2": 3}),
        Act(_start()),
        refused(ActionRefused, "cannot_pay"),
    ),
    ("roll: out of favor", started, Act(_roll("acct_p1")), check_roll),
    (
        "claim, raked, the revenue account unread",
        lambda: lone_survivor(rake_bps=500),
        Act(ClaimAction(type="claim", account_id="acct_p2")),
        lambda decision: _is(decision, NeedsRead("revenue_account")),
    ),
    (
        "claim, raked",
        lambda: lone_survivor(rake_bps=500, revenue_account="acct_revenue"),
        Act(ClaimAction(type="claim", account_id="acct_p2")),
        check_claim_raked,
    ),
    ("cancel", locked, Act(CancelAction(type="cancel")), check_cancelled),
    (
        "cancel, the history unread",
        lambda: locked(recorded=False),
        Act(CancelAction(type="cancel")),
        check_proof_read,
    ),
    ("a deadline passed, caught up", lambda: locked(at=LATE), CatchUp(), check_timed_out_catch_up),
    ("a deadline passed, nothing due", locked, CatchUp(), _no_writes),
    ("acted after the deadline", lambda: locked(at=LATE), Act(_start()), check_acted_after_deadline),
    ("beacon mode: the start accepted", lambda: locked(chain=QUICKNET), Act(_start()), check_beacon_accepted),
    (
        "a client seed once started",
        started,
        Act(_seed("acct_p1")),
        refused(ClientSeedLocked, "client_seed_locked"),
    ),
    ("a client seed once cancelled", cancelled, Act(_seed("acct_p1")), refused(ActionRefused, "game_over")),
    ("a client seed once settled", settled, Act(_seed("acct_p1")), refused(ActionRefused, "game_over")),
    ("a start once settled", settled, Act(_start()), refused(ActionRefused, "game_over")),
    (
        "a client seed after the deadline",
        lambda: locked(at=LATE),
        Act(_seed("acct_p1")),
        check_acted_after_deadline,
    ),
]


@pytest.mark.parametrize(
    ("build", "intent", "check"), [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_decide(build: Callable[[], LockedGame], intent: Any, check: Callable[[Decision], None]) -> None:
    game = build()
    check(decide(game, intent, fixed_env(game.clock.now)))


def test_a_roll_pending_refuses_the_next_action_and_writes_nothing() -> None:
    waiting = played(_start(), chain=QUICKNET)
    assert waiting.game.pending_roll is not None
    decision = decide(
        waiting, Act(RollAction(type="roll", account_id="acct_p1")), fixed_env(waiting.clock.now)
    )
    assert isinstance(decision, PendingBeaconRound)
    assert isinstance(decision.refusal, RollPending)
    assert decision.refusal.extensions["beacon_round"] == waiting.game.pending_roll["beacon_round"]
    assert not decision.kept
    _no_writes(decide(waiting, CatchUp(), fixed_env(waiting.clock.now)))


def test_the_same_env_decides_the_same_bytes() -> None:
    """Everything a decision draws is the env's: two decisions of the same game and env write the same."""
    first, second = (decide(locked(), Act(_start()), fixed_env(CREATED_AT)) for _ in range(2))
    assert isinstance(first, Written)
    assert isinstance(second, Written)
    assert first.writes.document() == second.writes.document()


def test_the_game_decided_on_is_not_changed() -> None:
    """A decision made again after a read (NeedsRead) starts from the same value: decide changes nothing
    it was given, and the game it returns is a new one."""
    game = lone_survivor(rake_bps=500)
    before = copy.deepcopy((game.game, tuple(game.seats), dict(game.balances)))
    decision = decide(game, Act(ClaimAction(type="claim", account_id="acct_p2")), fixed_env(CREATED_AT))
    assert decision == NeedsRead("revenue_account")
    raked = replace(game, revenue_account="acct_revenue")
    written = decide(raked, Act(ClaimAction(type="claim", account_id="acct_p2")), fixed_env(CREATED_AT))
    assert isinstance(written, Written)
    assert (game.game, tuple(game.seats), dict(game.balances)) == before
    assert (written.locked.game.status, written.locked.balances["acct_p2"]) == ("settled", 100 - 10 + 19)
