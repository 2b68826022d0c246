"""Reading one line of an audit bundle: its JSON and, for a game record, its proof parsed and checked
(pokna_verify.bundle.proofs). Pure: the checker (pokna_verify.bundle.check) and every worker process of
pokna_verify.bundle.scan read lines with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pokna_verify.bounded_input import InputLimitError, loads, on_line
from pokna_verify.bundle.log_records import game_log_leaf
from pokna_verify.bundle.proofs import GameProof, read_game_proof
from pokna_verify.bundle.records import GAME
from pokna_verify.fairness.beacon import KNOWN_CHAINS, BeaconChain
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.fairness.plain_json import loads_noting_plain

# A line as read: its number, its JSON value (None when unreadable), why it is unreadable, and for a game
# record its proof as read and checked.
ReadLine = tuple[int, Any, str | None, GameProof | None]
_GAME_MARK = f'"{GAME}"'
_READ_PROOF: dict[str, Any] = {}


def read_line(
    number: int,
    raw: str | bytes,
    proof_keys: Callable[[], KeyRing | None],
    beacon_chains: Sequence[BeaconChain] = KNOWN_CHAINS,
) -> ReadLine | None:
    """The line read as JSON, and a game record's proof checked (its drand rounds against `beacon_chains`);
    None for a blank line; InputLimitError naming the line when it is past a limit. Pure: a worker process
    reads its lines with this too."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    plain = False
    try:
        if _GAME_MARK in text:  # likely a game record: note whether its proof's signed bytes need a look
            record, plain = loads_noting_plain(text)
        else:
            record = loads(text)
    except ValueError as error:
        return number, None, f"line {number} is not JSON: {error}", None
    except InputLimitError as error:  # not a finding: nothing was judged (pokna_verify.bounded_input)
        raise on_line(number, error) from None
    proof = None
    if isinstance(record, dict) and record.get("type") == GAME:
        proof = read_game_proof(record.get("proof"), proof_keys(), plain=plain, beacon_chains=beacon_chains)
        if proof is not None and proof.facts is not None:
            proof = replace(proof, log_leaf=game_log_leaf(record))
        if proof is not None:
            # Read and checked: what the journal still asks of it is only that it was an object, so the
            # proof itself is not carried (nor sent back from a worker).
            record["proof"] = _READ_PROOF
    return number, record, None, proof
