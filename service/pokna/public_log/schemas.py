"""The public log's JSON answers. Hashes are standard base64 (RFC 4648 section 4), as in the checkpoints."""

from __future__ import annotations

import base64

from pydantic import BaseModel, ConfigDict, Field

from pokna.dealer.link_log import EXAMPLE_LOGGED
from pokna.public_log.reads import Consistency, Inclusion

EXAMPLE_CHECKPOINT: str = EXAMPLE_LOGGED["checkpoint"]  # the public link's example's: the same log


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


class InclusionOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "game_id": "game_050c1d2e3f4a5b6c7d8e9f0a1b2c3d4e",
                    "leaf_index": 5,
                    "tree_size": 7,
                    "entry": EXAMPLE_LOGGED["entry"],
                    "leaf_hash": "aJaYCTeg+QU7zwJ+lsBd1SKIbUbbNmKBMVc2tf1xitE=",
                    "root_hash": "Aw/4mt71hglFYsTjc93rBbZwyUclW4L1k+8W827LXsA=",
                    "inclusion_path": EXAMPLE_LOGGED["inclusion_path"],
                }
            ]
        }
    )
    game_id: str
    leaf_index: int = Field(description="The game's position in its tenant's log, from 0.")
    tree_size: int = Field(description="The size of the tree the path leads to the root of.")
    entry: str = Field(
        description="The leaf's bytes as text: RFC 8785 canonical JSON of the game id, `leaf` (the entry's "
        "kind), its pot account, the SHA-256 of its signed proof in canonical form, and its status."
    )
    leaf_hash: str = Field(description="SHA-256(0x00 || entry), base64.")
    root_hash: str = Field(description="The root of the tree of `tree_size` games, base64: its checkpoint's.")
    inclusion_path: list[str] = Field(description="RFC 9162 section 2.1.3's audit path, leaf first, base64.")

    @classmethod
    def of(cls, proof: Inclusion) -> InclusionOut:
        return cls(
            game_id=proof.game_id,
            leaf_index=proof.leaf_index,
            tree_size=proof.tree_size,
            entry=proof.entry,
            leaf_hash=_b64(proof.leaf_hash),
            root_hash=_b64(proof.root_hash),
            inclusion_path=[_b64(value) for value in proof.path],
        )


class ConsistencyOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "first": 4,
                    "second": 7,
                    "first_root_hash": "VLjW3wcf3PO+5ytWZ04YTeUNfDwj+O2yLV9P2PsnKL8=",
                    "second_root_hash": "Aw/4mt71hglFYsTjc93rBbZwyUclW4L1k+8W827LXsA=",
                    "consistency_path": ["H00R/QXzeTjWg+2O2NtZRO8z2M9fJh2zFyh9CstyPKg="],
                }
            ]
        }
    )
    first: int
    second: int
    first_root_hash: str = Field(description="The root of the first `first` games, base64.")
    second_root_hash: str = Field(description="The root of the first `second` games, base64.")
    consistency_path: list[str] = Field(description="RFC 9162 section 2.1.4's proof, base64; empty if equal.")

    @classmethod
    def of(cls, proof: Consistency) -> ConsistencyOut:
        return cls(
            first=proof.first,
            second=proof.second,
            first_root_hash=_b64(proof.first_root_hash),
            second_root_hash=_b64(proof.second_root_hash),
            consistency_path=[_b64(value) for value in proof.path],
        )
