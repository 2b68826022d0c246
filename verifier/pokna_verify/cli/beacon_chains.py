"""`--beacon-chain FILE`, as `pokna-verify proof|audit` (and so `pokna verify`, `pokna audit verify`) take it: a
drand chain's /info document to trust besides the public ones, and the line each report prints for it. One
module, so every command says the same thing about the same choice; the verifier's imports wait until a chain
is read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pokna_verify.cli.input_files import read_json_object

if TYPE_CHECKING:
    from pokna_verify.fairness.beacon import BeaconChain


def trusted_chains(paths: Sequence[Path]) -> tuple[BeaconChain, ...]:
    """Every chain a beacon-mode proof may name: the known public ones, then those in `paths`."""
    from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain

    extra = tuple(BeaconChain.from_drand_info(read_json_object(path, "beacon chain")) for path in paths)
    return (*KNOWN_CHAINS, *extra)


def also_trusted(chain: BeaconChain) -> str:
    """What a report says of a chain the user trusted with --beacon-chain: never silent."""
    return f"also trusted (--beacon-chain): chain {chain.chain_hash}, key {chain.public_key[:16]}…"
