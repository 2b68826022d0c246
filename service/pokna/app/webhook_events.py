"""The events Pokna sends, documented in the OpenAPI document's `webhooks` section (OpenAPI 3.1).

Each entry is what Pokna POSTs to an endpoint: the Standard Webhooks headers and the event's body (its
model is the one `pokna.outbox.Gathered` records). Any 2xx answer ends the delivery; anything else, a timeout
or a reset is retried with backoff.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Response

from pokna.outbox.events import EVENT_MODELS

_GAME = "game_5f0c2a9e4b7d4f1e9a3c6b8d2e1f0a7c"
_LINK = "/v1/fairness/proofs/q3T0b1mJ6mC2cX1yq8o0m7dQ9hN3xW2v"

EXAMPLES: dict[str, dict[str, Any]] = {
    "game.created": {
        "game_id": _GAME,
        "version": 1,
        "table_id": None,
        "currency": "CREDIT",
        "stake": 5,
        "challenge_raise": 5,
        "turn_timeout_seconds": 60,
        "account_ids": ["acct_vigo", "acct_p1", "acct_p2"],
        "start_deadline_at": "2026-12-01T14:10:00Z",
    },
    "game.started": {"game_id": _GAME, "version": 2, "pot": 15, "started_at": "2026-12-01T14:00:30Z"},
    "game.turn": {
        "game_id": _GAME,
        "version": 2,
        "phase": "seeking",
        "seats": [1],
        "account_ids": ["acct_p1"],
        "allowed_actions": ["roll"],
        "default_action": "roll",
        "deadline_at": "2026-12-01T14:01:30Z",
    },
    "game.turn_timed_out": {
        "game_id": _GAME,
        "version": 3,
        "seats": [1],
        "account_ids": ["acct_p1"],
        "applied_action": "roll",
        "deadline_at": "2026-12-01T14:01:30Z",
    },
    "game.settled": {
        "game_id": _GAME,
        "version": 9,
        "reason": "claimed",
        "payouts": [{"seat": 2, "account_id": "acct_p2", "amount": 15}],
        "public_url": _LINK,
        "verify_url": "/verify?proof=q3T0b1mJ6mC2cX1yq8o0m7dQ9hN3xW2v",
        "ended_at": "2026-12-01T14:03:00Z",
    },
    "game.cancelled": {
        "game_id": _GAME,
        "version": 2,
        "reason": "cancelled",
        "payouts": [],
        "public_url": _LINK,
        "verify_url": "/verify?proof=q3T0b1mJ6mC2cX1yq8o0m7dQ9hN3xW2v",
        "ended_at": "2026-12-01T14:10:00Z",
    },
    "ledger.deposit.posted": {
        "account_id": "acct_p1",
        "amount": 100,
        "currency": "CREDIT",
        "balance": 100,
        "journal_transaction_id": "jtx_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d",
        "ledger_chain": 9,
        "ledger_seq": 7,
        "reference": "topup-42",
        "posted_at": "2026-12-01T13:59:00Z",
    },
    "ledger.withdrawal.posted": {
        "account_id": "acct_p1",
        "amount": 40,
        "currency": "CREDIT",
        "balance": 60,
        "journal_transaction_id": "jtx_6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a",
        "ledger_chain": 9,
        "ledger_seq": 12,
        "reference": None,
        "posted_at": "2026-12-01T14:05:00Z",
    },
}

HEADERS = [
    {
        "name": "webhook-id",
        "in": "header",
        "required": True,
        "description": "The message id (`msg_...`): the same on every attempt; deduplicate on it.",
        "schema": {"type": "string"},
        "example": "msg_4a6c8e0b2d1f3a5c7e9b1d3f5a7c9e0b",
    },
    {
        "name": "webhook-timestamp",
        "in": "header",
        "required": True,
        "description": "Unix seconds when this attempt was signed; refuse messages far from your clock.",
        "schema": {"type": "string"},
        "example": "1796133600",
    },
    {
        "name": "webhook-signature",
        "in": "header",
        "required": True,
        "description": "`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the "
        "endpoint's secret; two, space-separated, while a rotated secret overlaps.",
        "schema": {"type": "string"},
        "example": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
    },
]

events = APIRouter()


def _document(event_type: str) -> None:
    model = EVENT_MODELS[event_type]
    example = {"type": event_type, "timestamp": "2026-12-01T14:00:00Z", "data": EXAMPLES[event_type]}

    def receive(message: Any) -> None:
        """Documentation only: Pokna sends this; your endpoint receives it."""

    receive.__annotations__["message"] = model  # the event's model is the documented body
    events.add_api_route(
        event_type,
        receive,
        methods=["POST"],
        summary=re.split(r"[:(]", model.__doc__ or event_type)[0].strip(),
        description=(model.__doc__ or "").strip()
        + "\n\nSigned per Standard Webhooks. Answer any 2xx within the timeout; anything else is retried.",
        operation_id=f"webhook_{event_type.replace('.', '_')}",
        openapi_extra={
            "parameters": HEADERS,
            "requestBody": {"content": {"application/json": {"example": example}}},
        },
        response_class=Response,
        responses={
            200: {"description": "Any 2xx: delivered; the body is read (at most 64 KiB) and dropped."},
            "default": {"description": "Anything else, no answer within the timeout, or a reset: retried."},
        },
        status_code=200,
    )


for _event_type in EVENT_MODELS:
    _document(_event_type)
