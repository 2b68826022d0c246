"""Invariants over random tables, stakes, balances, rolls and decisions (hypothesis)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from game_harness import DrawnRolls, Table, check_state
from hypothesis import HealthCheck, given, settings
from hypothesis import event as tally
from hypothesis import strategies as st

from pokna_verify.game import (
    REVENUE,
    Action,
    Cancel,
    CannotPay,
    Challenge,
    ChallengeUnaffordable,
    Claim,
    GameConfig,
    GameError,
    Phase,
    RecordedStep,
    Roll,
    Start,
    Timeout,
    Transfer,
    Vote,
    VoteChoice,
    action_from_dict,
    action_to_dict,
    replay,
    replay_steps,
    state_from_dict,
    state_to_dict,
    step,
    turn,
)
from pokna_verify.game.events import Anted, ChallengeStaked, Event, Raked, Rolled, Settled, VigoContributed
from pokna_verify.game.json_value import to_json_value
from pokna_verify.game.snapshot import SNAPSHOT_VERSION

faces = st.integers(min_value=1, max_value=6)
# No rake (today's default) often; otherwise any rate, capped or not, the edges included.
rake_terms = st.one_of(
    st.just((0, None)),
    st.tuples(
        st.one_of(st.integers(0, 10_000), st.sampled_from([1, 500, 9_999, 10_000])),
        st.one_of(st.none(), st.integers(0, 50)),
    ),
)


@dataclass
class Game:
    table: Table
    start_total: int
    start_balances: dict[int, int]


def step_bound(config: GameConfig, vigo_balance: int) -> int:
    """Each pass that reaches a vote costs the Vigo at least two stakes, so passes are bounded."""
    passes = vigo_balance // (2 * config.stake) + 1
    return 1 + passes * 2 * config.player_count + 3


def any_action(data: st.DataObject, config: GameConfig) -> Action:
    """Anything a client could send, mostly illegal: probes for refusals."""
    seat = data.draw(st.integers(min_value=-1, max_value=config.player_count + 1))
    choice = data.draw(st.sampled_from(VoteChoice))
    options: list[Action] = [
        Start(seat),
        Roll(seat),
        Claim(seat),
        Challenge(seat),
        Vote(seat, choice),
        Cancel(),
    ]
    return data.draw(st.sampled_from(options))


def legal_action(data: st.DataObject, table: Table) -> Action:
    state = table.state
    now = turn(state)
    if state.phase is Phase.OPEN:
        opening: list[Action] = [*[Start(0)] * 8, Cancel(), Timeout()]
        return data.draw(st.sampled_from(opening))
    if data.draw(st.integers(0, 9)) == 0:
        return Timeout()
    match state.phase:
        case Phase.SEEKING | Phase.CHALLENGE_FAVOR | Phase.CHALLENGE_ROLL:
            return Roll(now.seats[0])
        case Phase.LONE_SURVIVOR:
            decisions: list[Action] = [Claim(now.seats[0]), Challenge(now.seats[0])]
            return data.draw(st.sampled_from(decisions))
        case Phase.VOTING:
            return Vote(data.draw(st.sampled_from(now.seats)), data.draw(st.sampled_from(VoteChoice)))
    raise AssertionError(f"no action in {state.phase}")


def play_out(data: st.DataObject, *, probe: bool) -> Game:
    player_count = data.draw(st.integers(min_value=1, max_value=11), label="players")
    stake = data.draw(st.integers(min_value=1, max_value=20), label="stake")
    challenge_raise = data.draw(st.integers(min_value=1, max_value=40), label="raise")
    rake_bps, rake_cap = data.draw(rake_terms, label="rake")
    config = GameConfig(stake, challenge_raise, player_count, rake_bps, rake_cap)
    vigo_funds = st.one_of(st.integers(0, 4 * stake), st.integers(4 * stake, 30 * stake))
    balances = {0: data.draw(vigo_funds, label="vigo")}
    # Mostly everyone can ante; sometimes the table is short so that refusals get exercised too.
    short = data.draw(st.integers(0, 4), label="short table") == 0
    player_funds = st.integers(0 if short else stake, 3 * stake + 2 * challenge_raise)
    for seat in config.players:
        balances[seat] = data.draw(player_funds)
    table = Table.seated(config, balances)
    game = Game(table, table.ledger.total, dict(balances))
    rolls = DrawnRolls(lambda: data.draw(faces))
    for _ in range(step_bound(config, balances[0])):
        if table.state.is_over:
            break
        if probe and data.draw(st.booleans()):
            probe_once(table, any_action(data, config), rolls)
            if table.state.is_over:
                break
        action = legal_action(data, table)
        refusal = attempt(table, action, rolls)
        if isinstance(refusal, CannotPay):
            assert refusal.seats == tuple(s for s in config.players if balances[s] < stake)
            table.act(Cancel(), rolls)
        elif isinstance(refusal, ChallengeUnaffordable):
            seat = turn(table.state).seats[0]
            assert table.ledger.balances[seat] < challenge_raise
            table.act(Claim(seat), rolls)
        else:
            assert refusal is None, refusal
    assert table.state.is_over, f"not over after {step_bound(config, balances[0])} steps"
    outcome = table.state.outcome
    tally(outcome.reason.value if outcome else table.state.phase.value)
    tally(f"passes: {min(table.state.pass_number, 3)}{'+' if table.state.pass_number > 3 else ''}")
    return game


def attempt(table: Table, action: Action, rolls: DrawnRolls) -> GameError | None:
    try:
        table.act(action, rolls)
    except GameError as refusal:
        return refusal
    return None


def probe_once(table: Table, action: Action, rolls: DrawnRolls) -> None:
    """Try an arbitrary action: either it is legal and applies, or it changes nothing at all."""
    before, calls_before = table.state, rolls.calls
    now = turn(before)
    refusal = attempt(table, action, rolls)
    if refusal is None:
        if not isinstance(action, Cancel):
            assert action.name in now.allowed
            assert getattr(action, "seat", None) in now.seats
        return
    assert table.state is before
    assert rolls.calls == calls_before, f"{refusal.code} drew a roll"
    seat = getattr(action, "seat", 0)
    if seat not in table.config.seats:
        assert refusal.code == "unknown_seat"
    money = refusal.code in {"cannot_pay", "challenge_unaffordable"}
    if (
        isinstance(action, Start | Roll | Claim | Challenge | Vote)
        and seat in table.config.seats
        and not money
    ):
        assert action.name not in now.allowed or seat not in now.seats


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_money_is_conserved_and_nobody_is_overdrawn(data: st.DataObject) -> None:
    game = play_out(data, probe=False)
    table = game.table
    assert table.ledger.total == game.start_total
    state = table.state
    check_state(state)
    if state.phase is Phase.SETTLED:
        assert table.ledger.pot == 0
        assert state.outcome is not None
        received = {payout.seat: payout.amount for payout in state.outcome.payouts}
        for seat in state.config.seats:
            expected = game.start_balances[seat] - state.paid_in[seat] + received.get(seat, 0)
            assert table.ledger.balances[seat] == expected
        assert table.ledger.revenue == state.rake == state.config.rake_on(sum(state.paid_in))
    else:
        assert table.ledger.balances == game.start_balances
        assert table.ledger.revenue == 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_rolls_are_numbered_without_gaps_and_replay_reproduces_the_game(data: st.DataObject) -> None:
    table = play_out(data, probe=False).table
    rolled = table.rolled()
    assert [event.nonce for event in rolled] == list(range(len(rolled)))
    assert table.state.next_nonce == len(rolled)
    assert replay(table.config, table.records) == table.state
    replayed = replay_steps(table.config, table.records)
    assert [result.events for result in replayed] == [result.events for result in table.results]
    assert [result.transfers for result in replayed] == [result.transfers for result in table.results]
    # The record survives a trip through JSON-shaped dicts, as the game log stores it.
    relogged = [
        RecordedStep(action_from_dict(action_to_dict(record.action)), record.faces, record.balances)
        for record in table.records
    ]
    assert replay(table.config, relogged) == table.state
    # And every intermediate state survives the snapshot the shell stores, which is the generic walk's
    # lowering written out by hand: the same text, key order included.
    for result in table.results:
        stored = json.loads(json.dumps(state_to_dict(result.state)))
        assert state_from_dict(stored) == result.state
        walked = {"version": SNAPSHOT_VERSION, **to_json_value(result.state)}  # type: ignore[dict-item]
        assert json.dumps(state_to_dict(result.state)) == json.dumps(walked)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_illegal_actions_change_nothing(data: st.DataObject) -> None:
    table = play_out(data, probe=True).table
    assert table.state.is_over


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_events_are_json_and_report_every_roll_and_money_movement(data: st.DataObject) -> None:
    table = play_out(data, probe=False).table
    previous_nonce = 0
    for result, record in zip(table.results, table.records, strict=True):
        for event in result.events:
            as_dict = event.to_dict()
            assert json.loads(json.dumps(as_dict)) == as_dict
            assert as_dict["kind"] == event.kind.value
        for transfer in result.transfers:
            assert json.loads(json.dumps(transfer.to_dict())) == transfer.to_dict()
        drawn = [event for event in result.events if isinstance(event, Rolled)]
        assert [event.face for event in drawn] == list(record.faces)
        assert [event.nonce for event in drawn] == list(range(previous_nonce, result.state.next_nonce))
        previous_nonce = result.state.next_nonce
        assert money_in_events(result.events) == money_in_transfers(result.transfers)


def money_in_events(events: tuple[Event, ...]) -> tuple[int, int, list[tuple[int, int]]]:
    paid_in, raked, paid_out = 0, 0, []
    for event in events:
        if isinstance(event, Anted | VigoContributed):
            paid_in += event.amount
        elif isinstance(event, ChallengeStaked):
            paid_in += 2 * event.raise_amount
        elif isinstance(event, Raked):
            raked += event.amount
        elif isinstance(event, Settled):
            paid_out = [(payout.seat, payout.amount) for payout in event.payouts if payout.amount]
    return paid_in, raked, paid_out


def money_in_transfers(transfers: tuple[Transfer, ...]) -> tuple[int, int, list[tuple[int, int]]]:
    paid_in = sum(transfer.amount for transfer in transfers if transfer.into_pot)
    raked = sum(transfer.amount for transfer in transfers if transfer.payee is REVENUE)
    paid_out = [
        (transfer.seat, transfer.amount)
        for transfer in transfers
        if not transfer.into_pot and transfer.payee is not REVENUE
    ]
    return paid_in, raked, paid_out


@given(st.integers(1, 11), st.integers(1, 100), st.integers(0, 10**6))
def test_timeouts_alone_always_finish_a_game(player_count: int, stake: int, seed: int) -> None:
    """A table nobody touches still ends: every phase's default moves it towards settlement."""

    config = GameConfig.create(stake=stake, player_count=player_count)
    balances = dict.fromkeys(config.seats, 10**9)
    table = Table.seated(config, balances)
    table.act(Start(0), lambda nonce: 1)
    chooser = random.Random(seed)
    for _ in range(4 * player_count + 4):
        if table.state.is_over:
            break
        table.act(Timeout(), lambda nonce: chooser.randint(1, 6))
    # With timeouts only, votes default to split, so at most one pass is played.
    assert table.state.is_over
    assert table.state.pass_number == 1


def test_a_step_never_mutates_its_input() -> None:
    config = GameConfig.create(stake=1, player_count=2)
    table = Table.seated(config, dict.fromkeys(config.seats, 10))
    snapshot = table.state
    result = step(snapshot, Start(0), balances=table.ledger.balances, roll_face=lambda nonce: 2)
    assert snapshot.phase is Phase.OPEN
    assert snapshot.pot == 0
    assert snapshot.next_nonce == 0
    assert result.state is not snapshot
