"""The beacon fairness mode: rolls that also depend on a drand round published after the action was accepted.

drand's `quicknet` (the League of Entropy's threshold network) publishes a round every 3 s: a BLS signature
on G1 of sha256(round as 8 bytes big-endian) under the chain's public key, and randomness = sha256(that
signature). Nobody, the operator included, knows a round's randomness before the network publishes it, and
anyone can check it offline against the public key. A roll that mixes it in is unknowable to a holder of the
server seed until the named round exists.

Pure: the pairing comes from py-arkworks-bls12381 (a maintained binding of the arkworks curves); no clock,
no network. Times are integers of milliseconds since the Unix epoch; `parse_timestamp_ms` reads the RFC 3339
form proofs carry without `datetime` (the purity test keeps the clock's module out of this package).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from py_arkworks_bls12381 import GT, G1Point, G2Point

from pokna_verify.fairness.errors import FairnessError
from pokna_verify.fairness.json_reader import JsonReader
from pokna_verify.fairness.protocol import Roll, roll

BEACON_PROTOCOL = "pokna-hmac-sha256-drand-v1"
SCHEME = "bls-unchained-g1-rfc9380"
# RFC 9380 hash-to-curve onto G1 with drand's domain separation tag ("NUL": basic scheme, no augmentation).
SIGNATURE_DST = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"
SIGNATURE_HEX_LENGTH = 96  # a compressed G1 point, 48 bytes
PUBLIC_KEY_HEX_LENGTH = 192  # a compressed G2 point, 96 bytes
_HEX_RE = re.compile(r"[0-9a-f]*")
_TIMESTAMP_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_MS_PER_DAY = 86_400_000


class FairnessMode(StrEnum):
    """`stake`: today's Stake-compatible rolls (server seed, client seed, nonce). `beacon`: the same and a
    drand round's randomness."""

    STAKE = "stake"
    BEACON = "beacon"


class BeaconError(FairnessError):
    """A round that does not verify, or a time that cannot be read. The message names what failed."""

    code = "beacon_invalid"


@dataclass(frozen=True, slots=True)
class BeaconChain:
    """What a verifier needs of a drand chain. The public key is the trust anchor: a proof whose chain is
    not a known public one proves nothing (the operator could hold that key)."""

    scheme: str
    chain_hash: str
    public_key: str
    genesis_time: int  # seconds since the Unix epoch: round 1 is published then
    period: int  # seconds between rounds

    def to_json(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "chain_hash": self.chain_hash,
            "public_key": self.public_key,
            "genesis_time": self.genesis_time,
            "period": self.period,
        }

    @classmethod
    def read(cls, reader: JsonReader) -> BeaconChain:
        return cls(
            scheme=reader.string("scheme"),
            chain_hash=reader.string("chain_hash"),
            public_key=reader.string("public_key"),
            genesis_time=reader.integer("genesis_time"),
            period=reader.integer("period"),
        )

    @classmethod
    def from_drand_info(cls, info: Mapping[str, Any]) -> BeaconChain:
        """A relay's `/info` answer, in either of drand's spellings (v1: hash/schemeID, v2: chain_hash/scheme)."""
        reader = JsonReader(info)
        return cls(
            scheme=str(info.get("schemeID", info.get("scheme", ""))),
            chain_hash=str(info.get("hash", info.get("chain_hash", ""))),
            public_key=reader.string("public_key"),
            genesis_time=reader.integer("genesis_time"),
            period=reader.integer("period"),
        )


# The values below are those of the chain's /info (tests/fixtures/drand_quicknet_rounds.json records where
# they were read); its real rounds verify against this key in the tests.
QUICKNET = BeaconChain(
    scheme=SCHEME,
    chain_hash="52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
    public_key=(
        "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510"
        "d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
    ),
    genesis_time=1692803367,
    period=3,
)
KNOWN_CHAINS = (QUICKNET,)


@dataclass(frozen=True, slots=True)
class BeaconRound:
    """One published round, as a relay serves it at /{chain_hash}/public/{round} (hex strings)."""

    round: int
    randomness: str
    signature: str

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "randomness": self.randomness, "signature": self.signature}

    @classmethod
    def read(cls, reader: JsonReader) -> BeaconRound:
        return cls(
            round=reader.integer("round"),
            randomness=reader.string("randomness"),
            signature=reader.string("signature"),
        )


def round_published_at_ms(chain: BeaconChain, round_number: int) -> int:
    """Round r is published at genesis + (r - 1) x period; round 1 at genesis."""
    if round_number < 1:
        raise BeaconError(f"round {round_number}: rounds start at 1")
    return (chain.genesis_time + (round_number - 1) * chain.period) * 1000


def first_round_after_ms(chain: BeaconChain, accepted_at_ms: int) -> int:
    """The first round published strictly after `accepted_at_ms`: the one an action accepted then draws.
    Strictly, so a round published in the same millisecond as the acceptance is never used."""
    since_genesis = accepted_at_ms - chain.genesis_time * 1000
    if since_genesis < 0:
        return 1
    return since_genesis // (chain.period * 1000) + 2


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm), so no `datetime`."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def parse_timestamp_ms(text: str) -> int:
    """`YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339, UTC, milliseconds: one spelling per instant) to epoch ms."""
    match = _TIMESTAMP_RE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise BeaconError(f"{text!r} is not a UTC time written YYYY-MM-DDTHH:MM:SS.mmmZ")
    year, month, day, hour, minute, second, milli = (int(part) for part in match.groups())
    days_in_month = (31, 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28, 31, 30, 31,
                     30, 31, 31, 30, 31, 30, 31)  # fmt: skip
    if not (1 <= month <= 12 and 1 <= day <= days_in_month[month - 1] and hour < 24 and minute < 60):
        raise BeaconError(f"{text!r} is not a valid date and time")
    if second > 59:
        raise BeaconError(f"{text!r}: a leap second is not a time a proof may name")
    return (
        _days_from_civil(year, month, day) * _MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + milli
    )


def format_timestamp_ms(epoch_ms: int) -> str:
    """The inverse of parse_timestamp_ms."""
    days, within = divmod(epoch_ms, _MS_PER_DAY)
    # civil_from_days (H. Hinnant), the inverse of _days_from_civil.
    shifted = days + 719_468
    era = shifted // 146_097
    day_of_era = shifted - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + (3 if month_index < 10 else -9)
    year = year_of_era + era * 400 + (month <= 2)
    seconds, milli = divmod(within, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{milli:03d}Z"


def round_message(round_number: int) -> bytes:
    """What an unchained drand round signs: sha256 of the round number as 8 bytes big-endian."""
    return hashlib.sha256(round_number.to_bytes(8, "big")).digest()


def _hex_problem(name: str, value: str, length: int) -> str | None:
    if len(value) != length or _HEX_RE.fullmatch(value) is None:
        return f"{name} is not {length} lowercase hexadecimal characters"
    return None


def chain_problem(chain: BeaconChain) -> str | None:
    """Why `chain` cannot be verified against, or None."""
    if chain.scheme != SCHEME:
        return f"scheme is {chain.scheme!r}; this verifier knows only {SCHEME!r}"
    if chain.period < 1:
        return f"period is {chain.period}, not a positive number of seconds"
    return _hex_problem("public_key", chain.public_key, PUBLIC_KEY_HEX_LENGTH)


def round_problem(chain: BeaconChain, beacon_round: BeaconRound) -> str | None:
    """Why `beacon_round` is not a round the chain published, or None: the BLS signature must verify under
    the chain's public key for this round number, and the randomness must be sha256(signature)."""
    problem = chain_problem(chain)
    if problem is not None:
        return f"chain: {problem}"
    if isinstance(beacon_round.round, bool) or beacon_round.round < 1 or beacon_round.round >= 2**64:
        return f"round {beacon_round.round} is not a round number (1 to 2^64 - 1)"
    problem = _hex_problem("signature", beacon_round.signature, SIGNATURE_HEX_LENGTH) or _hex_problem(
        "randomness", beacon_round.randomness, 64
    )
    if problem is not None:
        return problem
    signature_bytes = bytes.fromhex(beacon_round.signature)
    try:
        signature = G1Point.from_compressed_bytes(signature_bytes)
        public_key = G2Point.from_compressed_bytes(bytes.fromhex(chain.public_key))
    except (ValueError, TypeError) as error:  # not a point of the curve, or outside the subgroup
        return f"signature or public key is not a valid curve point ({error})"
    hashed = G1Point.hash_to_curve(round_message(beacon_round.round), SIGNATURE_DST)
    # e(signature, g2) == e(H(m), public key)  <=>  e(signature, g2) * e(-H(m), public key) == 1
    if not GT.pairing_check([signature, -hashed], [G2Point(), public_key]):
        return (
            f"the BLS signature does not verify for round {beacon_round.round} under the chain's public key"
        )
    derived = hashlib.sha256(signature_bytes).hexdigest()
    if derived != beacon_round.randomness:
        return f"randomness is {beacon_round.randomness}, sha256(signature) is {derived}"
    return None


def verify_round(chain: BeaconChain, beacon_round: BeaconRound) -> BeaconRound:
    """The round, if the chain published it; raises BeaconError naming what failed otherwise."""
    problem = round_problem(chain, beacon_round)
    if problem is not None:
        raise BeaconError(f"round {beacon_round.round}: {problem}")
    return beacon_round


def beacon_client_seed(client_seed: str, randomness: str) -> str:
    """The client seed a beacon-mode roll feeds Stake's generator: the game client seed, ":", the round's
    randomness. Both are 64 hex characters, so the joined text splits back one way only, and any Stake
    verifier given this client seed reproduces the roll."""
    return f"{client_seed}:{randomness}"


def beacon_roll(server_seed: str, client_seed: str, nonce: int, randomness: str) -> Roll:
    """HMAC-SHA256(server_seed, f"{client_seed}:{randomness}:{nonce}:0"): today's roll with the round's
    randomness as one more field of the message."""
    return roll(server_seed, beacon_client_seed(client_seed, randomness), nonce)
