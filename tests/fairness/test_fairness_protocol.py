"""The roll stream against vectors computed here by an independent implementation (hmac + fractions)."""

from __future__ import annotations

import hashlib
import hmac
import math
from fractions import Fraction

import pytest
from fairness_samples import CHECK_SERVER_SEED, CHECK_SERVER_SEED_HASH, GAME_CLIENT_SEED_B, SEED_B, VECTORS
from hypothesis import given
from hypothesis import strategies as st

from pokna_verify.fairness.errors import InvalidClientSeedError, InvalidNonceError, InvalidServerSeedError
from pokna_verify.fairness.protocol import (
    CLIENT_SEED_ALPHABET,
    client_seed_problem,
    face_of_digest,
    faces,
    game_client_seed,
    generate_client_seed,
    generate_server_seed,
    require_client_seed,
    roll,
    server_seed_hash,
)
from pokna_verify.game.cube import Color


def independent_f(server_seed: str, client_seed: str, nonce: int) -> Fraction:
    """Stake's byte generator written out from the spec, sharing no code with pokna_verify.fairness."""
    digest = hmac.new(server_seed.encode(), f"{client_seed}:{nonce}:0".encode(), hashlib.sha256).digest()
    return sum((Fraction(byte, 256 ** (i + 1)) for i, byte in enumerate(digest[:4])), Fraction(0))


def test_the_published_check_vector_verbatim() -> None:
    result = roll(CHECK_SERVER_SEED, "pokna-client", 0)
    assert repr(result.f) == "0.2409662576392293"
    assert result.face == 2
    assert result.color is Color.RED
    assert server_seed_hash(CHECK_SERVER_SEED) == CHECK_SERVER_SEED_HASH
    assert hashlib.sha256(CHECK_SERVER_SEED.encode("ascii")).hexdigest() == CHECK_SERVER_SEED_HASH


def test_game_client_seed_of_vector_b() -> None:
    assert game_client_seed(["vigo-seed", "alice.1", "bob_~-2"]) == GAME_CLIENT_SEED_B
    assert hashlib.sha256(b"vigo-seed\nalice.1\nbob_~-2").hexdigest() == GAME_CLIENT_SEED_B
    assert hashlib.sha256(b"pokna test vector seed B").hexdigest() == SEED_B


@pytest.mark.parametrize(("server_seed", "client_seed", "nonce", "f", "face", "color"), VECTORS)
def test_vectors_by_independent_implementation(
    server_seed: str, client_seed: str, nonce: int, f: str, face: int, color: str
) -> None:
    exact = independent_f(server_seed, client_seed, nonce)
    assert repr(float(exact)) == f
    assert math.floor(exact * 6) + 1 == face
    assert ("red" if face <= 3 else "blue") == color


@pytest.mark.parametrize(("server_seed", "client_seed", "nonce", "f", "face", "color"), VECTORS)
def test_vectors_by_package(
    server_seed: str, client_seed: str, nonce: int, f: str, face: int, color: str
) -> None:
    result = roll(server_seed, client_seed, nonce)
    assert (repr(result.f), result.face, str(result.color)) == (f, face, color)


@pytest.mark.parametrize(("server_seed", "client_seed", "nonce", "f", "face", "color"), VECTORS)
def test_vectors_by_the_auditors_fast_path(
    server_seed: str, client_seed: str, nonce: int, f: str, face: int, color: str
) -> None:
    assert faces(server_seed, client_seed, [nonce]) == [face]


@given(
    st.binary(min_size=32, max_size=32).map(bytes.hex),
    st.one_of(st.text(CLIENT_SEED_ALPHABET, min_size=1, max_size=64), st.text(max_size=80)),
    st.lists(st.integers(min_value=0, max_value=2**70), max_size=12),
)
def test_faces_is_roll_face_for_every_nonce(server_seed: str, client_seed: str, nonces: list[int]) -> None:
    """The fast path (HMAC's padded-key states hashed once per game) against the readable definition.
    Free text as client seed too (Stake-style vectors), surrogates excepted: neither path can encode them."""
    if any("\ud800" <= ch <= "\udfff" for ch in client_seed):
        return
    assert faces(server_seed, client_seed, nonces) == [
        roll(server_seed, client_seed, nonce).face for nonce in nonces
    ]


@pytest.mark.parametrize("bad_nonce", [-1, True, 1.0])
def test_faces_refuses_what_roll_refuses(bad_nonce: int) -> None:
    with pytest.raises(InvalidNonceError):
        faces(CHECK_SERVER_SEED, "pokna-client", [0, bad_nonce])
    with pytest.raises(InvalidServerSeedError):
        faces(CHECK_SERVER_SEED.upper(), "pokna-client", [0])


def test_vectors_cover_nonces_above_255_and_both_colours() -> None:
    assert sum(nonce > 255 for _, _, nonce, *_ in VECTORS) >= 4
    assert {color for *_, color in VECTORS} == {"red", "blue"}


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_integer_face_equals_float_formula(u32: int) -> None:
    assert face_of_digest(u32.to_bytes(4, "big") + bytes(28)) == math.floor(Fraction(u32, 2**32) * 6) + 1


@pytest.mark.parametrize("face", range(1, 7))
def test_each_face_owns_the_exact_u32_interval_between_its_boundaries(face: int) -> None:
    """Face k takes u32 in [ceil((k-1)*2**32/6), ceil(k*2**32/6)): sizes differ by at most one of 2**32."""
    low = -(-(face - 1) * 2**32 // 6)
    high = -(-face * 2**32 // 6) - 1
    assert face_of_digest(low.to_bytes(4, "big") + bytes(28)) == face
    assert face_of_digest(high.to_bytes(4, "big") + bytes(28)) == face
    if face > 1:
        assert face_of_digest((low - 1).to_bytes(4, "big") + bytes(28)) == face - 1
    assert high - low + 1 in (2**32 // 6, 2**32 // 6 + 1)


def test_red_and_blue_are_exactly_even() -> None:
    """Red is u32 < 2**31 exactly: floor(u*6/2**32) <= 2 iff u < 3 * 2**32 / 6 = 2**31."""
    assert face_of_digest((2**31 - 1).to_bytes(4, "big") + bytes(28)) == 3
    assert face_of_digest((2**31).to_bytes(4, "big") + bytes(28)) == 4


def test_server_seeds_are_fresh_64_hex() -> None:
    seeds = {generate_server_seed() for _ in range(50)}
    assert len(seeds) == 50
    for seed in seeds:
        assert len(seed) == 64
        assert set(seed) <= set("0123456789abcdef")


@pytest.mark.parametrize(
    "bad_seed",
    [
        "",
        CHECK_SERVER_SEED[:-1],
        CHECK_SERVER_SEED + "0",
        CHECK_SERVER_SEED.upper(),
        "g" * 64,
        " " + CHECK_SERVER_SEED[1:],
    ],
)
def test_server_seed_has_exactly_one_spelling(bad_seed: str) -> None:
    with pytest.raises(InvalidServerSeedError):
        roll(bad_seed, "pokna-client", 0)
    with pytest.raises(InvalidServerSeedError):
        server_seed_hash(bad_seed)


@pytest.mark.parametrize("bad_nonce", [-1, True])
def test_nonce_is_a_non_negative_integer(bad_nonce: int) -> None:
    with pytest.raises(InvalidNonceError):
        roll(CHECK_SERVER_SEED, "pokna-client", bad_nonce)


@pytest.mark.parametrize("good", ["a", "Z" * 64, CLIENT_SEED_ALPHABET[:64], "._~-", "0", "A.b_c~d-9"])
def test_client_seed_accepts(good: str) -> None:
    assert client_seed_problem(good) is None
    assert require_client_seed(good) == good


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ("", "1 to 64 characters, not 0"),
        ("a" * 65, "1 to 64 characters, not 65"),
        ("with space", "not ' '"),
        ("new\nline", "not '\\n'"),
        ("colon:", "not ':'"),
        ("slash/", "not '/'"),
        ("plus+", "not '+'"),
        ("é", "not 'é'"),
        ("ａ", "not 'ａ'"),  # full-width a: letters outside ASCII are refused
    ],
)
def test_client_seed_refuses(bad: str, problem: str) -> None:
    assert problem in (client_seed_problem(bad) or "")
    with pytest.raises(InvalidClientSeedError):
        require_client_seed(bad)
    with pytest.raises(InvalidClientSeedError):
        game_client_seed(["fine", bad])


def test_client_seed_must_be_a_string() -> None:
    assert client_seed_problem(7) == "a client seed is a string"


def test_generated_client_seeds_are_valid_and_distinct() -> None:
    seeds = {generate_client_seed() for _ in range(50)}
    assert len(seeds) == 50
    assert all(client_seed_problem(seed) is None for seed in seeds)


def test_game_client_seed_depends_on_every_seat_and_the_order() -> None:
    base = game_client_seed(["a", "b", "c"])
    assert base == hashlib.sha256(b"a\nb\nc").hexdigest()
    assert game_client_seed(["a", "c", "b"]) != base
    assert game_client_seed(["a", "b", "d"]) != base
    assert game_client_seed(["a", "b"]) != base
    with pytest.raises(InvalidClientSeedError):
        game_client_seed([])


@given(st.lists(st.text(alphabet=CLIENT_SEED_ALPHABET, min_size=1, max_size=64), min_size=1, max_size=8))
def test_game_client_seed_is_the_joined_hash(seeds: list[str]) -> None:
    assert game_client_seed(seeds) == hashlib.sha256("\n".join(seeds).encode()).hexdigest()
