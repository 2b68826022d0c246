"""`step`: state + action + rolls + balances -> new state, events and transfers. Pure and deterministic.

The engine owns no randomness and no money. Rolls come from `roll_face(nonce)`, called exactly once per
roll in nonce order; balances are read only to refuse what a seat cannot pay, and money moves only as
`Transfer` data for the ledger to post. A refused action raises a `GameError` before any roll is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pokna_verify.game.actions import Action, Cancel, Challenge, Claim, Roll, Start, Timeout, Vote
from pokna_verify.game.cube import FACES, Color, color_of
from pokna_verify.game.errors import (
    AlreadyVoted,
    CannotPay,
    GameOver,
    InvalidRoll,
    InvalidVote,
    NotYourTurn,
    UnknownSeat,
    WrongPhase,
)
from pokna_verify.game.events import (
    Anted,
    Cancelled,
    Challenged,
    ChallengeStaked,
    Claimed,
    Eliminated,
    Event,
    GameStarted,
    PassEnded,
    PassStarted,
    Raked,
    Rolled,
    RollPurpose,
    Settled,
    TimedOut,
    VigoBust,
    VigoContributed,
    Voted,
    VoteDecided,
)
from pokna_verify.game.evolve import evolve
from pokna_verify.game.model import (
    VIGO_SEAT,
    Ballot,
    GameState,
    Outcome,
    Phase,
    SeatStatus,
    SettleReason,
    VoteChoice,
)
from pokna_verify.game.split import split_pot
from pokna_verify.game.transfers import POT, REVENUE, Transfer, TransferKind
from pokna_verify.game.turn import refusal_for_funds, turn
from pokna_verify.invariant import present

RollFace = Callable[[int], int]


@dataclass(frozen=True)
class StepResult:
    state: GameState
    events: tuple[Event, ...]
    transfers: tuple[Transfer, ...]


def step(state: GameState, action: Action, *, balances: Mapping[int, int], roll_face: RollFace) -> StepResult:
    """Apply one action. `balances` is each seat's spendable balance now; a missing seat counts as 0."""
    _refuse_if_illegal(state, action, balances)
    play = _Play(state, balances, roll_face)
    match action:
        case Start():
            _start(play)
        case Roll(seat=seat):
            _roll(play, seat)
        case Claim(seat=seat):
            _claim(play, seat)
        case Challenge(seat=seat):
            _challenge(play, seat)
        case Vote(seat=seat, choice=choice):
            _vote(play, seat, VoteChoice(choice))
        case Cancel():
            _cancel(play)
        case Timeout():
            _timeout(play)
    return StepResult(play.state, tuple(play.events), tuple(play.transfers))


def _refuse_if_illegal(state: GameState, action: Action, balances: Mapping[int, int]) -> None:
    if state.is_over:
        raise GameOver(state.phase)
    if isinstance(action, Timeout):
        return
    if isinstance(action, Cancel):
        if state.phase is not Phase.OPEN:
            raise WrongPhase(state.phase, action.name)
        return
    seat = action.seat
    if not isinstance(seat, int) or isinstance(seat, bool) or seat not in state.config.seats:
        raise UnknownSeat(seat)
    if isinstance(action, Vote) and action.choice not in set(VoteChoice):
        raise InvalidVote(action.choice)
    now = turn(state)
    if action.name not in now.allowed:
        raise WrongPhase(state.phase, action.name)
    if seat not in now.seats:
        if isinstance(action, Vote) and state.voted(seat):
            raise AlreadyVoted(seat)
        raise NotYourTurn(seat, now.seats)
    if (refusal := refusal_for_funds(state, action.name, balances)) is not None:
        raise refusal


class _Play:
    """The step being built. Local and mutable for readability; only the frozen result escapes."""

    def __init__(self, state: GameState, balances: Mapping[int, int], roll_face: RollFace) -> None:
        self.state = state
        self.events: list[Event] = []
        self.transfers: list[Transfer] = []
        self._balances = balances
        self._roll_face = roll_face
        self._spent: dict[int, int] = {}

    @property
    def stake(self) -> int:
        return self.state.config.stake

    def update(self, **changes: Any) -> None:
        self.state = evolve(self.state, **changes)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def can_pay(self, seat: int, amount: int) -> bool:
        """Counts what the seat already paid in this step, so several transfers never overdraw it."""
        return self._balances.get(seat, 0) - self._spent.get(seat, 0) >= amount

    def pay_in(self, kind: TransferKind, seat: int, amount: int) -> None:
        if not self.can_pay(seat, amount):
            raise CannotPay((seat,), amount)
        self._spent[seat] = self._spent.get(seat, 0) + amount
        self.transfers.append(Transfer(kind, seat, POT, amount))
        paid_in = list(self.state.paid_in)
        paid_in[seat] += amount
        self.update(pot=self.state.pot + amount, paid_in=tuple(paid_in))

    def pay_out(self, kind: TransferKind, seat: int, amount: int) -> None:
        if amount > self.state.pot:
            raise AssertionError(f"paying {amount} out of a pot of {self.state.pot}")
        self.transfers.append(Transfer(kind, POT, seat, amount))
        paid_out = list(self.state.paid_out)
        paid_out[seat] += amount
        self.update(pot=self.state.pot - amount, paid_out=tuple(paid_out))

    def roll(self, seat: int, purpose: RollPurpose, favor: Color | None = None) -> Rolled:
        """Draw the next roll. Seeking rolls compare against `favor`; the Vigo's rolls set it."""
        nonce = self.state.next_nonce
        face = self._roll_face(nonce)
        if not isinstance(face, int) or isinstance(face, bool) or face not in FACES:
            raise InvalidRoll(nonce, face)
        color = color_of(face)
        self.update(next_nonce=nonce + 1)
        rolled = Rolled(
            nonce=nonce,
            seat=seat,
            purpose=purpose,
            face=face,
            color=color,
            favor=color if favor is None else favor,
            in_favor=None if favor is None else color is favor,
        )
        self.emit(rolled)
        return rolled

    def eliminate(self, seat: int) -> None:
        statuses = list(self.state.statuses)
        statuses[seat] = SeatStatus.ELIMINATED
        self.update(statuses=tuple(statuses))
        self.emit(Eliminated(seat, self.state.pass_number))

    def take_rake(self) -> None:
        """Before a pot is paid out, the house takes its share of the whole pot; the payouts share the rest."""
        config = self.state.config
        pot = self.state.pot
        amount = config.rake_on(pot)
        if amount <= 0:
            return
        self.transfers.append(Transfer(TransferKind.RAKE, POT, REVENUE, amount))
        self.update(pot=pot - amount, rake=self.state.rake + amount)
        self.emit(Raked(amount, pot, config.rake_bps, config.rake_cap))

    def settle(self, reason: SettleReason, winners: tuple[int, ...], kind: TransferKind) -> None:
        """The pot goes to `winners` (one seat takes it all; several split it), less the rake."""
        pot = self.state.pot
        self.take_rake()
        payouts = split_pot(self.state.pot, winners)
        for payout in payouts:
            if payout.amount > 0:
                self.pay_out(kind, payout.seat, payout.amount)
        if self.state.pot != 0:
            raise AssertionError(f"settlement left {self.state.pot} in the pot")
        self.update(phase=Phase.SETTLED, to_roll=(), outcome=Outcome(reason, payouts))
        self.emit(Settled(reason, payouts, pot))


def _start(play: _Play) -> None:
    config = play.state.config
    play.emit(GameStarted(config.stake, config.challenge_raise, config.player_count))
    favor = play.roll(VIGO_SEAT, RollPurpose.FAVOR).color
    play.update(favor=favor)
    for seat in config.players:
        play.pay_in(TransferKind.ANTE, seat, config.stake)
        play.emit(Anted(seat, config.stake, play.state.pot))
    _begin_pass(play)


def _begin_pass(play: _Play) -> None:
    seats = play.state.survivors
    favor = present(play.state.favor, "the favor, rolled before any pass")
    play.update(phase=Phase.SEEKING, to_roll=seats, votes=(), pass_number=play.state.pass_number + 1)
    play.emit(PassStarted(play.state.pass_number, seats, favor))


def _roll(play: _Play, seat: int) -> None:
    state = play.state
    favor = present(state.favor, "the favor, rolled before any pass")
    if state.phase is Phase.SEEKING:
        rolled = play.roll(seat, RollPurpose.SEEK, favor)
        play.update(to_roll=state.to_roll[1:])
        if not rolled.in_favor:
            play.eliminate(seat)
        if not play.state.to_roll:
            _end_pass(play)
    elif state.phase is Phase.CHALLENGE_FAVOR:
        new_favor = play.roll(seat, RollPurpose.CHALLENGE_FAVOR).color
        play.update(favor=new_favor, phase=Phase.CHALLENGE_ROLL)
    elif state.phase is Phase.CHALLENGE_ROLL:
        if play.roll(seat, RollPurpose.CHALLENGE, favor).in_favor:
            play.settle(SettleReason.CHALLENGE_WON, (seat,), TransferKind.PAYOUT)
        else:
            play.eliminate(seat)
            play.settle(SettleReason.CHALLENGE_LOST, (VIGO_SEAT,), TransferKind.PAYOUT)
    else:  # pragma: no cover - turn() allows roll only in the phases above
        raise WrongPhase(state.phase, Roll.name)


def _end_pass(play: _Play) -> None:
    survivors = play.state.survivors
    play.emit(PassEnded(play.state.pass_number, survivors))
    if not survivors:
        play.settle(SettleReason.NO_SURVIVORS, (VIGO_SEAT,), TransferKind.PAYOUT)
        return
    if len(survivors) == 1:
        play.update(phase=Phase.LONE_SURVIVOR, challenger=survivors[0])
        return
    contribution = play.stake * len(survivors)
    if not play.can_pay(VIGO_SEAT, contribution):
        play.emit(VigoBust(contribution, survivors))
        play.settle(SettleReason.VIGO_BUST, survivors, TransferKind.SPLIT)
        return
    play.pay_in(TransferKind.VIGO_CONTRIBUTION, VIGO_SEAT, contribution)
    play.emit(VigoContributed(contribution, survivors, play.state.pot))
    play.update(phase=Phase.VOTING, votes=())


def _claim(play: _Play, seat: int) -> None:
    pot = play.state.pot
    play.emit(Claimed(seat, pot))
    play.settle(SettleReason.CLAIMED, (seat,), TransferKind.PAYOUT)


def _challenge(play: _Play, seat: int) -> None:
    raise_amount = play.state.config.challenge_raise
    play.emit(Challenged(seat))
    if not play.can_pay(VIGO_SEAT, raise_amount):
        play.emit(VigoBust(raise_amount, (seat,)))
        play.settle(SettleReason.VIGO_BUST, (seat,), TransferKind.PAYOUT)
        return
    play.pay_in(TransferKind.CHALLENGE_RAISE, VIGO_SEAT, raise_amount)
    play.pay_in(TransferKind.CHALLENGE_MATCH, seat, raise_amount)
    play.emit(ChallengeStaked(seat, raise_amount, play.state.pot))
    play.update(phase=Phase.CHALLENGE_FAVOR)


def _vote(play: _Play, seat: int, choice: VoteChoice) -> None:
    """One roll_again decides at once: unanimity for split can no longer be reached, so waiting is moot."""
    votes = (*play.state.votes, Ballot(seat, choice))
    play.update(votes=votes)
    play.emit(Voted(seat, choice))
    if choice is VoteChoice.ROLL_AGAIN:
        play.emit(VoteDecided(VoteChoice.ROLL_AGAIN, votes))
        _begin_pass(play)
    elif len(votes) == len(play.state.survivors):
        play.emit(VoteDecided(VoteChoice.SPLIT, votes))
        survivors = play.state.survivors
        play.settle(SettleReason.SPLIT, survivors, TransferKind.SPLIT)


def _cancel(play: _Play) -> None:
    play.update(phase=Phase.CANCELLED)
    play.emit(Cancelled())


def _timeout(play: _Play) -> None:
    now = turn(play.state)
    default_action = present(now.default_action, "a default action for a turn that can time out")
    play.emit(TimedOut(play.state.phase, now.seats, default_action))
    match play.state.phase:
        case Phase.OPEN:
            _cancel(play)
        case Phase.SEEKING | Phase.CHALLENGE_FAVOR | Phase.CHALLENGE_ROLL:
            _roll(play, now.seats[0])
        case Phase.LONE_SURVIVOR:
            _claim(play, now.seats[0])
        case Phase.VOTING:
            for seat in now.seats:
                _vote(play, seat, VoteChoice.SPLIT)
        case _:  # pragma: no cover - refused above as game_over
            raise GameOver(play.state.phase)
