"""The collusion case of docs/fairness.md, section 5, played with the rules engine and a drand relay on
127.0.0.1: a player who holds the server seed (and, like everyone, the client seeds) before the start.

In the default mode they know the first roll (nonce 0, the Vigo's favor) before anyone acts. In the beacon
mode the start draws the first round published after it was accepted: at the acceptance that round does not
exist anywhere (the relay has not published it), so nothing the colluder holds determines the roll, and the
same knowledge meets different first rolls in different games.

This is the fairness half of the case, below the HTTP service; tests/dealer/test_dealer_beacon_mode.py plays
the same case over HTTP, with the seed leaked from the service's own vault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from fairness_samples import BALANCE, CHECK_SERVER_SEED, CLIENT_SEEDS, TERMS

from pokna.drand import BeaconRelays
from pokna_verify.fairness.beacon import beacon_roll, first_round_after_ms
from pokna_verify.fairness.protocol import game_client_seed, roll
from pokna_verify.game import GameConfig, Start, new_game, step
from pokna_verify.game.events import Rolled
from support.beacon_server import BeaconRelay, beacon_relay

CLIENT_SEED = game_client_seed([entry.client_seed for entry in CLIENT_SEEDS])


def favor_roll(roll_face: Callable[[int], int]) -> int:
    """The face of the first roll of a new game, drawn by its start."""
    config = GameConfig.create(stake=TERMS.stake, challenge_raise=TERMS.challenge_raise, player_count=2)
    balances = dict.fromkeys(config.seats, BALANCE)
    result = step(new_game(config), Start(0), balances=balances, roll_face=roll_face)
    rolled = [event for event in result.events if isinstance(event, Rolled)]
    assert rolled[0].nonce == 0
    return rolled[0].face


def colluder_prediction() -> int:
    """All a colluder can compute before the start: the server seed and the client seeds."""
    return roll(CHECK_SERVER_SEED, CLIENT_SEED, 0).face


def beacon_faces(randomness: str) -> Callable[[int], int]:
    return lambda nonce: beacon_roll(CHECK_SERVER_SEED, CLIENT_SEED, nonce, randomness).face


@pytest.fixture
def relay() -> Iterator[BeaconRelay]:
    with beacon_relay(period=1, rounds_before_now=3) as running:
        yield running


def test_in_the_default_mode_the_seed_holder_knows_the_first_roll() -> None:
    prediction = colluder_prediction()
    assert favor_roll(lambda nonce: roll(CHECK_SERVER_SEED, CLIENT_SEED, nonce).face) == prediction


def test_in_the_beacon_mode_the_seed_holder_cannot_know_the_first_roll(relay: BeaconRelay) -> None:
    # The service's clock is the relay's, paused, which the test moves on a period at a time: on a loaded
    # machine the real clock could publish the named round between the acceptance and the check.
    relay.pause_clock()
    relays = BeaconRelays(
        urls=[relay.url], chain=relay.chain, margin_seconds=1.0, clock=lambda: relay.now_ms() / 1000
    )
    faces = []
    for _ in range(8):  # eight games, the colluder's knowledge the same in each
        accepted_at_ms = relays.now_ms()
        named = first_round_after_ms(relays.chain, accepted_at_ms)
        while first_round_after_ms(relays.chain, accepted_at_ms + 250) != named:
            # As the service does (it refuses an acceptance within 50 ms of its round's due time and takes
            # it again after).
            relay.advance(0.3)
            accepted_at_ms = relays.now_ms()
            named = first_round_after_ms(relays.chain, accepted_at_ms)
        # At the acceptance the named round is not published: no relay can give it to anyone.
        assert asyncio.run(relays.latest()).round < named
        assert asyncio.run(relays.get(named)) is None
        relay.advance(1.0)  # the round arrives (without waiting a real period)
        arrived = asyncio.run(relays.wait_for(named))
        faces.append(favor_roll(beacon_faces(arrived.randomness)))
    # The first roll is not a function of what the colluder held: the same seeds met different rolls. (The
    # rounds differ from run to run, with the clock; eight equal faces would happen once in 280,000 runs.)
    assert len(set(faces)) > 1, faces
    # Nor is it their prediction from the seeds: over eight games at most a chance share of them agree.
    assert faces.count(colluder_prediction()) < len(faces)
