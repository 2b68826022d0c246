"""The card's EXAMPLE OF PLAY, step by step. Every expected number below is read off the card."""

from __future__ import annotations

from game_harness import ScriptedRolls, Table

from pokna_verify.game import (
    POT,
    Challenge,
    Color,
    GameConfig,
    Phase,
    Roll,
    SeatStatus,
    SettleReason,
    Start,
    Transfer,
    TransferKind,
    Vote,
    VoteChoice,
    round_seating,
    turn,
)
from pokna_verify.game.events import Rolled

RED, BLUE = 2, 5  # one red face, one blue face


def phase(table: Table) -> Phase:
    """Read afresh: `table.act` replaces the state, which mypy's narrowing of attributes cannot see."""
    return table.state.phase


def survivors(table: Table) -> tuple[int, ...]:
    return table.state.survivors


def test_the_card_example_of_play() -> None:
    # "Five players gather at the table. The Vigo sets the stake at 1 credit" - the Vigo and four players.
    config = GameConfig.create(stake=1, player_count=4)
    start_balances = {seat: 10 for seat in range(5)}
    table = Table.seated(config, start_balances)

    # "...and rolls red. Each player antes 1 credit, for a pot of 4 credits."
    result = table.act(Start(0), ScriptedRolls([RED]))
    assert table.state.favor is Color.RED
    assert table.state.pot == 4
    assert result.transfers == tuple(Transfer(TransferKind.ANTE, seat, POT, 1) for seat in (1, 2, 3, 4))

    # "Player 1 rolls red - still in favor", players 2 and 3 roll blue, player 4 red.
    for seat, face in ((1, RED), (2, BLUE), (3, BLUE)):
        assert turn(table.state).seats == (seat,)
        result = table.act(Roll(seat), ScriptedRolls([face], first_nonce=table.state.next_nonce))
        assert result.transfers == ()
        assert table.state.pot == 4
    assert table.state.statuses[2] is SeatStatus.ELIMINATED
    assert table.state.statuses[3] is SeatStatus.ELIMINATED

    # "Two remain in favor. The Vigo pays 2 credits into the pot, raising the total to 6."
    result = table.act(Roll(4), ScriptedRolls([RED], first_nonce=table.state.next_nonce))
    assert survivors(table) == (1, 4)
    assert result.transfers == (Transfer(TransferKind.VIGO_CONTRIBUTION, 0, POT, 2),)
    assert table.state.pot == 6
    assert phase(table) is Phase.VOTING

    # "Player 1 offers to split, but Player 4 refuses. They roll again."
    table.act(Vote(1, VoteChoice.SPLIT), ScriptedRolls())
    assert phase(table) is Phase.VOTING
    result = table.act(Vote(4, VoteChoice.ROLL_AGAIN), ScriptedRolls())
    assert phase(table) is Phase.SEEKING
    assert table.state.favor is Color.RED  # the same favor
    assert result.transfers == ()
    assert table.state.pot == 6

    # "Player 1 rolls red - still in favor. Player 4 rolls blue - eliminated."
    table.act(Roll(1), ScriptedRolls([RED], first_nonce=table.state.next_nonce))
    result = table.act(Roll(4), ScriptedRolls([BLUE], first_nonce=table.state.next_nonce))
    assert phase(table) is Phase.LONE_SURVIVOR
    assert survivors(table) == (1,)
    assert result.transfers == ()  # a lone survivor draws no contribution from the Vigo
    assert table.state.pot == 6  # "Player 1 may claim the 6 credits"

    # "The Vigo adds another 1 credit to the pot, and the player matches, bringing the total to 8."
    result = table.act(Challenge(1), ScriptedRolls())
    assert result.transfers == (
        Transfer(TransferKind.CHALLENGE_RAISE, 0, POT, 1),
        Transfer(TransferKind.CHALLENGE_MATCH, 1, POT, 1),
    )
    assert table.state.pot == 8

    # The card does not show the Vigo's new roll; since player 1's blue loses, it was red.
    table.act(Roll(0), ScriptedRolls([RED], first_nonce=table.state.next_nonce))
    assert table.state.favor is Color.RED
    # "Player 1 rolls blue - eliminated. The Vigo wins the pot of 8 credits."
    result = table.act(Roll(1), ScriptedRolls([BLUE], first_nonce=table.state.next_nonce))
    assert result.transfers == (Transfer(TransferKind.PAYOUT, POT, 0, 8),)
    assert phase(table) is Phase.SETTLED
    assert table.state.outcome is not None
    assert table.state.outcome.reason is SettleReason.CHALLENGE_LOST
    assert table.state.pot == 0

    # Net: the Vigo put in 2 + 1 and took 8; player 1 lost ante and match; players 2-4 lost their ante.
    assert table.ledger.balances == {0: 10 + 5, 1: 10 - 2, 2: 10 - 1, 3: 10 - 1, 4: 10 - 1}

    # Nine rolls in all (favor, four seeks, two re-rolls, challenge favor, challenge), numbered 0..8.
    rolls = table.rolled()
    assert [roll.nonce for roll in rolls] == list(range(9))
    assert [(roll.seat, roll.purpose.value) for roll in rolls] == [
        (0, "favor"),
        (1, "seek"),
        (2, "seek"),
        (3, "seek"),
        (4, "seek"),
        (1, "seek"),
        (4, "seek"),
        (0, "challenge_favor"),
        (1, "challenge"),
    ]

    # "The title of Vigo passes to the Player 1 for the next round."
    assert round_seating(5, 1)[0] == 1


def test_every_roll_in_the_example_is_an_event_with_its_colour() -> None:
    config = GameConfig.create(stake=1, player_count=4)
    table = Table.seated(config, dict.fromkeys(range(5), 10))
    rolls = ScriptedRolls([RED, RED, BLUE, BLUE, RED])
    for action in (Start(0), Roll(1), Roll(2), Roll(3), Roll(4)):
        table.act(action, rolls)
    seen = [
        (event.seat, event.color, event.in_favor) for event in table.rolled() if isinstance(event, Rolled)
    ]
    assert seen == [
        (0, Color.RED, None),
        (1, Color.RED, True),
        (2, Color.BLUE, False),
        (3, Color.BLUE, False),
        (4, Color.RED, True),
    ]
