"""The rake rule (docs/rules.md, "Rake"): exact integers, taken once on the whole pot as it is paid out,
the rest paid as without a rake, and the terms checked at creation."""

from __future__ import annotations

import pytest
from game_harness import ScriptedRolls, Table

from pokna_verify.game import (
    POT,
    REVENUE,
    Cancel,
    Claim,
    GameConfig,
    InvalidConfig,
    Payout,
    Roll,
    SettleReason,
    Start,
    Timeout,
    Transfer,
    TransferKind,
    Vote,
    VoteChoice,
)
from pokna_verify.game.events import Raked, Settled

RED, BLUE = 2, 5


@pytest.mark.parametrize(
    ("pot", "bps", "cap", "rake"),
    [
        (8, 500, None, 0),  # 0.4 rounds down: a unit is never rounded up from a fraction
        (19, 500, None, 0),
        (20, 500, None, 1),
        (800, 500, None, 40),
        (800, 500, 30, 30),
        (800, 500, 40, 40),
        (800, 500, 0, 0),
        (199, 500, None, 9),
        (7, 10_000, None, 7),
        (10**12, 1, None, 10**8),
        (0, 10_000, None, 0),
    ],
)
def test_the_rake_is_the_rate_rounded_down_then_capped(
    pot: int, bps: int, cap: int | None, rake: int
) -> None:
    assert GameConfig(1, 1, 1, rake_bps=bps, rake_cap=cap).rake_on(pot) == rake


def test_a_split_shares_what_the_rake_leaves_remainder_clockwise() -> None:
    config = GameConfig.create(stake=10, player_count=3, rake_bps=1_000)
    table = Table.seated(config, dict.fromkeys(range(4), 100))
    table.act(Start(0), ScriptedRolls([RED]))
    for seat, face in ((1, RED), (2, RED), (3, BLUE)):
        table.act(Roll(seat), ScriptedRolls([face], first_nonce=table.state.next_nonce))
    assert table.state.pot == 50  # three antes and the Vigo's 20 for two survivors
    table.act(Vote(1, VoteChoice.SPLIT), ScriptedRolls())
    result = table.act(Vote(2, VoteChoice.SPLIT), ScriptedRolls())
    assert result.transfers == (
        Transfer(TransferKind.RAKE, POT, REVENUE, 5),
        Transfer(TransferKind.SPLIT, POT, 1, 23),
        Transfer(TransferKind.SPLIT, POT, 2, 22),
    )
    raked, settled = (event for event in result.events if isinstance(event, Raked | Settled))
    assert raked == Raked(amount=5, pot=50, rake_bps=1_000, rake_cap=None)
    assert settled == Settled(SettleReason.SPLIT, (Payout(1, 23), Payout(2, 22)), 50)
    assert (table.state.pot, table.state.rake, table.ledger.revenue) == (0, 5, 5)


def test_the_vigo_taking_the_pot_pays_the_rake_too() -> None:
    config = GameConfig.create(stake=100, player_count=2, rake_bps=500, rake_cap=7)
    table = Table.seated(config, dict.fromkeys(range(3), 1000))
    table.act(Start(0), ScriptedRolls([RED]))
    table.act(Roll(1), ScriptedRolls([BLUE], first_nonce=1))
    result = table.act(Roll(2), ScriptedRolls([BLUE], first_nonce=2))
    assert result.transfers == (
        Transfer(TransferKind.RAKE, POT, REVENUE, 7),  # 5% of 200 is 10, capped at 7
        Transfer(TransferKind.PAYOUT, POT, 0, 193),
    )
    assert table.state.outcome is not None
    assert table.state.outcome.payouts == (Payout(0, 193),)


def test_no_rake_event_or_transfer_when_it_rounds_to_nothing() -> None:
    config = GameConfig.create(stake=1, player_count=1, rake_bps=500)
    table = Table.seated(config, {0: 5, 1: 5})
    table.act(Start(0), ScriptedRolls([RED]))
    table.act(Roll(1), ScriptedRolls([RED], first_nonce=1))
    result = table.act(Claim(1), ScriptedRolls())
    assert result.transfers == (Transfer(TransferKind.PAYOUT, POT, 1, 1),)
    assert not any(isinstance(event, Raked) for event in result.events)


def test_a_cancelled_game_takes_no_rake() -> None:
    for action in (Cancel(), Timeout()):
        table = Table.seated(
            GameConfig.create(stake=5, player_count=2, rake_bps=10_000), dict.fromkeys(range(3), 50)
        )
        result = table.act(action, ScriptedRolls())
        assert result.transfers == ()
        assert (table.state.rake, table.ledger.revenue) == (0, 0)


@pytest.mark.parametrize(
    ("terms", "field"),
    [
        ({"rake_bps": 10_001}, "rake_bps"),
        ({"rake_bps": -1}, "rake_bps"),
        ({"rake_bps": True}, "rake_bps"),
        ({"rake_bps": 500, "rake_cap": -1}, "rake_cap"),
        ({"rake_bps": 500, "rake_cap": 1.5}, "rake_cap"),
    ],
)
def test_bad_terms_are_refused_naming_the_field(terms: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        GameConfig.create(stake=1, player_count=1, **terms)  # type: ignore[arg-type]
    assert refused.value.details["field"] == field


def test_a_rake_transfer_goes_only_from_the_pot_to_the_revenue() -> None:
    with pytest.raises(ValueError, match="rake"):
        Transfer(TransferKind.RAKE, POT, 1, 5)
    with pytest.raises(ValueError, match="rake"):
        Transfer(TransferKind.PAYOUT, POT, REVENUE, 5)
    assert Transfer(TransferKind.RAKE, POT, REVENUE, 5).to_dict() == {
        "kind": "rake",
        "payer": "pot",
        "payee": "revenue",
        "amount": 5,
    }
