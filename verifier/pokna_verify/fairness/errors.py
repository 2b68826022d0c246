"""Typed fairness errors, each with a stable `code` the HTTP layer can turn into problem+json."""

from __future__ import annotations


class FairnessError(ValueError):
    """Every error this package raises on bad input; a ValueError, so callers may treat it as one."""

    code = "fairness_error"


class InvalidServerSeedError(FairnessError):
    code = "invalid_server_seed"


class InvalidClientSeedError(FairnessError):
    code = "invalid_client_seed"


class InvalidNonceError(FairnessError):
    code = "invalid_nonce"


class UnknownKeyError(FairnessError):
    code = "unknown_key"


class SeedVaultError(FairnessError):
    """Deliberately vague: wrong key, wrong game id and a corrupted token look the same to the caller."""

    code = "seed_vault_error"


class MalformedProofError(FairnessError):
    """The document is not a proof at all (missing field, wrong type): unusable, as opposed to invalid."""

    code = "malformed_proof"

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
