"""A game's events as the API documents them: one model per `kind`, each with its own `data` (issue 26).

The rules' events (`pokna_verify.game.events`) are frozen dataclasses whose fields are the record; their answer
models are derived from those fields here, so a field added to an event is documented without a second
list to keep. The dealer's own kinds (`game_created`, `client_seed_set`, `action`, `money_moved`) are
written out. `data` is given back as it was recorded: every model keeps fields it does not know."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from datetime import datetime
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from pokna.dealer.proof_schemas import ProofAction, ProofTransfer
from pokna_verify.game import events as rules_events
from pokna_verify.game.json_value import field_names


class _Recorded(BaseModel):
    model_config = ConfigDict(extra="allow")


class GameCreatedEventData(_Recorded):
    server_seed_hash: str = Field(description="The commitment: SHA-256 of the secret server seed.")


class ClientSeedSetEventData(_Recorded):
    seat: int
    client_seed: str


class RollAcceptedEventData(_Recorded):
    """Beacon mode: a drawing action accepted, its rolls to use `beacon_round` (docs/fairness.md, 1b)."""

    action: dict[str, int | str] = Field(description="The action as the rules record it.")
    accepted_at: str = Field(description="When it was accepted (UTC, milliseconds).")
    beacon_round: int = Field(description="The drand round its rolls use: the first published after.")
    round_due_at: str = Field(description="When that round is published.")


class MoneyMovedEventData(ProofTransfer):
    """A transfer of the rules, as the ledger posted it."""

    journal_transaction_id: str = Field(description="The journal transaction that posted it.")
    ledger_chain: int = Field(
        description="Which of the tenant's hash chains it is on (a game's are all on one)."
    )
    ledger_seq: int = Field(description="Its place on that chain.")


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_RECORD_MODELS: dict[type, type[BaseModel]] = {}


def _json_type(hint: Any) -> Any:
    """The type of a dataclass field as `to_json_value` writes it: enums as their values, tuples as
    lists, nested dataclasses as objects."""
    origin = typing.get_origin(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return Literal[tuple(member.value for member in hint)]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint not in _RECORD_MODELS:
            _RECORD_MODELS[hint] = _model_of(hint, f"Event{hint.__name__}")
        return _RECORD_MODELS[hint]
    if origin in (tuple, list):
        return list[_json_type(typing.get_args(hint)[0])]  # type: ignore[misc]
    if origin in (Union, types.UnionType):
        return Union[tuple(_json_type(arg) for arg in typing.get_args(hint))]  # noqa: UP007
    return hint


def _model_of(record: type, name: str, **extra: Any) -> type[BaseModel]:
    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {field: (_json_type(hints[field]), ...) for field in field_names(record)}
    own = record.__doc__ or ""
    doc = f"{own}\n\n" if not own.startswith(f"{record.__name__}(") else ""  # not the dataclass's signature
    doc += "The fields as the rules recorded them (docs/rules.md)."
    return create_model(name, __base__=_Recorded, __doc__=doc, **extra, **fields)


def _literal(value: str) -> Any:
    return (Literal[value], ...)


def _event_out(kind: str, data: Any) -> type[BaseModel]:
    return create_model(
        f"{_pascal(kind)}EventOut",
        seq=(int, Field(description="The event's number in the game, from 1, without gaps.")),
        kind=_literal(kind),
        data=(data, ...),
        occurred_at=(datetime, ...),
    )


def _rules_event_outs() -> list[type[BaseModel]]:
    outs = []
    for event in rules_events.Event.__subclasses__():
        kind = event.kind.value
        data = _model_of(event, f"{_pascal(kind)}EventData", kind=_literal(kind))
        outs.append(_event_out(kind, data))
    return outs


_ALL = [
    _event_out("game_created", GameCreatedEventData),
    _event_out("client_seed_set", ClientSeedSetEventData),
    _event_out("action", ProofAction),
    _event_out("money_moved", MoneyMovedEventData),
    _event_out("roll_accepted", RollAcceptedEventData),
    *_rules_event_outs(),
]


class GameEventOut(RootModel[Annotated[Union[tuple(_ALL)], Field(discriminator="kind")]]):  # type: ignore[misc]  # noqa: UP007
    """One event of a game, told apart by `kind`: `action` records a request as decided, `money_moved` a
    posting; the others are the rules' events (docs/rules.md). `data` is the event's fields as recorded."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "seq": 7,
                    "kind": "rolled",
                    "data": {
                        "kind": "rolled",
                        "nonce": 1,
                        "seat": 1,
                        "purpose": "seek",
                        "face": 2,
                        "color": "red",
                        "favor": "red",
                        "in_favor": True,
                    },
                    "occurred_at": "2026-12-01T12:00:05.123456Z",
                }
            ]
        }
    )
