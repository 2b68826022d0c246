"""pokna_verify.fairness.beacon: real quicknet rounds verify, tampered ones fail naming what failed, round times and
the beacon roll formula hold against independent computations."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pokna_verify.fairness.beacon import (
    QUICKNET,
    BeaconChain,
    BeaconError,
    BeaconRound,
    beacon_roll,
    first_round_after_ms,
    format_timestamp_ms,
    parse_timestamp_ms,
    round_problem,
    round_published_at_ms,
    verify_round,
)
from support.beacon_server import BeaconKey

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "drand_quicknet_rounds.json").read_text())
REAL_ROUNDS = {entry["round"]: BeaconRound(**entry) for entry in FIXTURE["rounds"]}

# As the fixture's sources print them, next to the signatures (not derived here).
PUBLISHED_RANDOMNESS = {
    123: "fb8f7bc29bf24db51871ec8c79f3a1e4bd0557bc0dfcee9ed1d924e69d1c60dc",
    1000: "fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd",
}

# (server seed, game client seed, round, nonce, f, face): the table in docs/fairness.md, section 1b.
# Computed with Python's hmac module directly (see test_vectors_follow_the_documented_formula).
SEED_B = "7c5d3bc613611eb1c9844baf2a63c8f3f0371890caa869971736e3e1b0195de4"
GAME_CLIENT_SEED_B = "3aca9319b4b5040aacac6263d3c89ae176c0392d5839e53cc2b372545346ec6f"
CHECK_SERVER_SEED = "5d5c1ae0f3b7d8ab1a6c3e6f6b4e2d9a0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a59"
BEACON_VECTORS = [
    (SEED_B, GAME_CLIENT_SEED_B, 1000, 0, "0.43604122940450907", 3),
    (SEED_B, GAME_CLIENT_SEED_B, 1000, 1, "0.016784324077889323", 1),
    (SEED_B, GAME_CLIENT_SEED_B, 1000, 5, "0.8039746021386236", 5),
    (CHECK_SERVER_SEED, GAME_CLIENT_SEED_B, 123, 0, "0.40079622995108366", 3),
]


def test_the_pinned_chain_is_quicknet_as_its_info_document_describes_it() -> None:
    info = FIXTURE["info"]
    assert BeaconChain.from_drand_info(info) == QUICKNET
    assert (info["scheme"], info["period"], info["genesis_time"]) == (
        "bls-unchained-g1-rfc9380",
        3,
        1692803367,
    )


@pytest.mark.parametrize("number", sorted(REAL_ROUNDS))
def test_real_quicknet_rounds_verify(number: int) -> None:
    assert verify_round(QUICKNET, REAL_ROUNDS[number]) == REAL_ROUNDS[number]


@pytest.mark.parametrize("number", sorted(PUBLISHED_RANDOMNESS))
def test_randomness_is_the_sha256_of_the_signature_as_published(number: int) -> None:
    real = REAL_ROUNDS[number]
    assert hashlib.sha256(bytes.fromhex(real.signature)).hexdigest() == PUBLISHED_RANDOMNESS[number]


def test_a_tampered_round_number_fails_naming_the_signature() -> None:
    tampered = dataclasses.replace(REAL_ROUNDS[1000], round=1001)
    with pytest.raises(BeaconError, match="round 1001: the BLS signature does not verify for round 1001"):
        verify_round(QUICKNET, tampered)


def test_tampered_randomness_fails_naming_the_randomness() -> None:
    real = REAL_ROUNDS[1000]
    tampered = dataclasses.replace(real, randomness=REAL_ROUNDS[1001].randomness)
    problem = round_problem(QUICKNET, tampered)
    assert problem == f"randomness is {REAL_ROUNDS[1001].randomness}, sha256(signature) is {real.randomness}"


@pytest.mark.parametrize("position", [0, 20, 47])
def test_a_tampered_signature_fails(position: int) -> None:
    real = REAL_ROUNDS[1002]
    raw = bytearray(bytes.fromhex(real.signature))
    raw[position] ^= 0x01
    problem = round_problem(QUICKNET, dataclasses.replace(real, signature=raw.hex()))
    assert problem is not None
    assert "signature" in problem


def test_a_round_swapped_for_another_real_round_fails() -> None:
    """The signature and randomness of round 1001 passed off as round 1000's."""
    swapped = dataclasses.replace(REAL_ROUNDS[1001], round=1000)
    assert round_problem(QUICKNET, swapped) == (
        "the BLS signature does not verify for round 1000 under the chain's public key"
    )


def test_a_round_signed_by_another_key_fails_under_quicknet_and_verifies_under_its_own() -> None:
    key = BeaconKey()
    signed = key.sign(1000)
    assert round_problem(key.chain(QUICKNET.genesis_time, 3), signed) is None
    assert round_problem(QUICKNET, signed) is not None


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("signature", "zz" * 48, "signature is not 96 lowercase hexadecimal characters"),
        ("signature", "ab" * 47, "signature is not 96 lowercase hexadecimal characters"),
        ("randomness", "AB" * 32, "randomness is not 64 lowercase hexadecimal characters"),
        ("round", 0, "round 0 is not a round number (1 to 2^64 - 1)"),
    ],
)
def test_malformed_rounds_are_refused_naming_the_field(field: str, value: Any, problem: str) -> None:
    assert round_problem(QUICKNET, dataclasses.replace(REAL_ROUNDS[1000], **{field: value})) == problem


def test_round_times_follow_genesis_and_period() -> None:
    genesis_ms = QUICKNET.genesis_time * 1000
    assert round_published_at_ms(QUICKNET, 1) == genesis_ms
    assert round_published_at_ms(QUICKNET, 1000) == genesis_ms + 999 * 3000
    assert first_round_after_ms(QUICKNET, genesis_ms - 1) == 1
    assert first_round_after_ms(QUICKNET, genesis_ms) == 2  # round 1 is published then, not after
    assert first_round_after_ms(QUICKNET, genesis_ms + 999 * 3000 - 1) == 1000
    assert first_round_after_ms(QUICKNET, genesis_ms + 999 * 3000) == 1001
    with pytest.raises(BeaconError):
        round_published_at_ms(QUICKNET, 0)


@given(st.integers(min_value=0, max_value=4_000_000_000_000))
def test_the_round_after_an_acceptance_is_the_first_published_strictly_after_it(accepted_at_ms: int) -> None:
    named = first_round_after_ms(QUICKNET, accepted_at_ms)
    assert round_published_at_ms(QUICKNET, named) > accepted_at_ms
    if named > 1:
        assert round_published_at_ms(QUICKNET, named - 1) <= accepted_at_ms


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)))  # noqa: DTZ001
def test_timestamps_read_and_write_as_datetime_does(moment: datetime) -> None:
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    epoch_ms = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    assert parse_timestamp_ms(text) == epoch_ms
    assert format_timestamp_ms(epoch_ms) == text


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-02T10:00:00Z",
        "2026-12-02T10:00:00.000+00:00",
        "2026-02-29T10:00:00.000Z",
        "2026-12-02 10:00:00.000Z",
    ],
)
def test_other_spellings_of_a_time_are_refused(text: str) -> None:
    with pytest.raises(BeaconError):
        parse_timestamp_ms(text)


@pytest.mark.parametrize(("server_seed", "client_seed", "number", "nonce", "f", "face"), BEACON_VECTORS)
def test_vectors_follow_the_documented_formula(
    server_seed: str, client_seed: str, number: int, nonce: int, f: str, face: int
) -> None:
    randomness = REAL_ROUNDS[number].randomness
    message = f"{client_seed}:{randomness}:{nonce}:0".encode()
    digest = hmac.new(server_seed.encode(), message, hashlib.sha256).digest()
    rolled = beacon_roll(server_seed, client_seed, nonce, randomness)
    assert rolled.digest == digest
    assert (repr(rolled.f), rolled.face) == (f, face)


def test_the_beacon_changes_the_roll() -> None:
    """Same seeds and nonce, two rounds: the faces of many nonces differ somewhere (they are independent)."""
    first = [beacon_roll(SEED_B, GAME_CLIENT_SEED_B, n, REAL_ROUNDS[1000].randomness).face for n in range(32)]
    second = [
        beacon_roll(SEED_B, GAME_CLIENT_SEED_B, n, REAL_ROUNDS[1001].randomness).face for n in range(32)
    ]
    assert first != second


def test_the_documented_vectors_are_the_tested_ones() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "fairness.md").read_text()
    names = {SEED_B: "seed B", CHECK_SERVER_SEED: "`5d5c1ae0…4a59` (check vector)"}
    for server_seed, _, number, nonce, f, face in BEACON_VECTORS:
        assert f"| {names[server_seed]} | client seed B | {number} | {nonce} | {f} | {face} |" in doc
    for number, randomness in PUBLISHED_RANDOMNESS.items():
        assert f"`{randomness}`" in doc, number
