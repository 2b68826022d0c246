"""The public link's `public_log` member: where a finished game is in its tenant's public log.

It sits beside the signed proof, not inside it: the proof is signed when the game ends and the game is
logged a pass of the sequencer later, so the proof cannot name its leaf without being signed twice (and the
leaf holds the hash of the proof, so the proof can never hold its own leaf). The member is not covered by the
proof's signature; it needs none of its own. The checkpoint in it is a signed note (the service's key, under
the log's origin), the path is checked against that note's root, and the leaf is rebuilt from the proof
itself, so whoever checks it trusts nothing the link's wrapper says. The dealer owns the link's answer;
the public log (pokna.public_log.game_links) fills this member in, which the dealer cannot import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from psycopg import AsyncConnection
from pydantic import BaseModel, ConfigDict, Field

_LOG_URL = Field(
    description="The tenant's public log, relative to this link's origin: `<log_url>/checkpoint` is its "
    "latest checkpoint (docs/fairness.md, section 6)."
)
EXAMPLE_LOG_URL = "/v1/logs/tnt_0c1d2e3f"
_ORIGIN = "pokna.example/games/tnt_0c1d2e3f"
EXAMPLE_LOGGED: dict[str, Any] = {
    "status": "logged",
    "log_url": EXAMPLE_LOG_URL,
    "origin": _ORIGIN,
    "leaf_index": 5,
    "game_number": 6,
    "tree_size": 7,
    "entry": '{"game_id":"game_050c1d2e3f4a5b6c7d8e9f0a1b2c3d4e","leaf":"pokna.game/1",'
    '"pot_account_id":"acct_059a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d",'
    '"proof_sha256":"647bbbdcdfe0f1c27cd1897c7fafb030721a1701b33cd3914572229916877751",'
    '"status":"settled"}',
    "inclusion_path": [
        "SmGYoRYROvkk9eUEc8aBpYjCp1t30pij15jIihdr+1Y=",
        "n0U6wH7w4dNWRqNgFjE+Nw65r4vUtVfrAfBwGjeL2zk=",
        "VLjW3wcf3PO+5ytWZ04YTeUNfDwj+O2yLV9P2PsnKL8=",
    ],
    "checkpoint": f"{_ORIGIN}\n7\nAw/4mt71hglFYsTjc93rBbZwyUclW4L1k+8W827LXsA=\n"
    f"ledger 0 42 {'9f' * 32}\nledger 3 17 {'4e' * 32}\n\n"
    f"\u2014 {_ORIGIN} O1Rys6NVRNRP/cZJ65ZJ32roPwyLQK2cApczJ0X2i6FzxSHrApg4nSh66asg9wKN54HXyaEFVesvszieAH5q0DDXqAM=\n",
}


class LinkLogPendingOut(BaseModel):
    """A finished game the sequencer has not appended yet (about a second after its end)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"status": "pending", "log_url": EXAMPLE_LOG_URL}]}
    )
    status: Literal["pending"] = Field(description="Not in the log yet; the link shows its place once it is.")
    log_url: str = _LOG_URL


class LinkLogIncludedOut(BaseModel):
    """The game's leaf and its RFC 9162 audit path to the root of the log's latest signed checkpoint."""

    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE_LOGGED]})

    status: Literal["logged"] = Field(description="The game is in its tenant's public log.")
    log_url: str = _LOG_URL
    origin: str = Field(description="The log's origin: the checkpoint's first line and its key name.")
    leaf_index: int = Field(description="The game's leaf, from 0.")
    game_number: int = Field(description="`leaf_index + 1`: the game is game #N of the log.")
    tree_size: int = Field(description="The size of the checkpoint the path leads to the root of.")
    entry: str = Field(
        description="The leaf's bytes as text (RFC 8785 JSON of the game id, `leaf`, its pot account, "
        "`proof_sha256` and status): a checker rebuilds it from the proof and compares."
    )
    inclusion_path: list[str] = Field(description="RFC 9162 section 2.1.3's audit path, leaf first, base64.")
    checkpoint: str = Field(
        description="The C2SP signed note of `tree_size` games, as `<log_url>/checkpoints/<tree_size>` "
        "serves it: check its signature with a key of `keys_url` under `origin`, so the inclusion "
        "verifies offline."
    )


LinkPublicLogOut = Annotated[LinkLogPendingOut | LinkLogIncludedOut, Field(discriminator="status")]

PlaceInLog = Callable[
    [AsyncConnection[Any], str, str, "int | None"], Awaitable[LinkLogPendingOut | LinkLogIncludedOut]
]
"""(connection, tenant id, game id, its leaf index or None) -> the member; the public log provides it."""
