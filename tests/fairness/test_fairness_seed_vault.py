"""Server seeds sealed at rest open only with the right key, for the right game."""

from __future__ import annotations

import pytest
from fairness_samples import CHECK_SERVER_SEED

from pokna_verify.fairness.errors import InvalidServerSeedError, SeedVaultError
from pokna_verify.fairness.seed_vault import generate_vault_key, open_server_seed, seal_server_seed

KEY = bytes(range(32))


def test_round_trip() -> None:
    token = seal_server_seed(CHECK_SERVER_SEED, KEY, "game-1")
    assert token.startswith("v1.")
    assert CHECK_SERVER_SEED not in token
    assert open_server_seed(token, KEY, "game-1") == CHECK_SERVER_SEED


def test_each_seal_uses_a_fresh_nonce() -> None:
    assert seal_server_seed(CHECK_SERVER_SEED, KEY, "g") != seal_server_seed(CHECK_SERVER_SEED, KEY, "g")


def test_wrong_key_fails() -> None:
    token = seal_server_seed(CHECK_SERVER_SEED, KEY, "game-1")
    with pytest.raises(SeedVaultError):
        open_server_seed(token, generate_vault_key(), "game-1")


def test_token_moved_to_another_game_fails() -> None:
    token = seal_server_seed(CHECK_SERVER_SEED, KEY, "game-1")
    with pytest.raises(SeedVaultError):
        open_server_seed(token, KEY, "game-2")


def test_any_flipped_character_fails() -> None:
    token = seal_server_seed(CHECK_SERVER_SEED, KEY, "game-1")
    for index in range(3, len(token)):
        if token[index] == ".":
            continue
        flipped = token[:index] + ("A" if token[index] != "A" else "B") + token[index + 1 :]
        with pytest.raises(SeedVaultError):
            open_server_seed(flipped, KEY, "game-1")


@pytest.mark.parametrize(
    "token", ["", "v2.AAAA.AAAA", "v1", "v1.AAAA", "v1.!!!.AAAA", "v1.AAAAAAAAAAAAAAAA.AA"]
)
def test_malformed_tokens_fail(token: str) -> None:
    with pytest.raises(SeedVaultError):
        open_server_seed(token, KEY, "game-1")


@pytest.mark.parametrize("key", [b"", bytes(16), bytes(33)])
def test_key_must_be_32_bytes(key: bytes) -> None:
    with pytest.raises(SeedVaultError, match="32 bytes"):
        seal_server_seed(CHECK_SERVER_SEED, key, "g")


def test_only_valid_seeds_are_sealed() -> None:
    with pytest.raises(InvalidServerSeedError):
        seal_server_seed("not a seed", KEY, "g")
