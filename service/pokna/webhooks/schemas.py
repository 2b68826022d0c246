"""The webhooks' documented answers: an endpoint (its secret only when it is made or rotated) and a
delivery (never anything of the receiver's answer beyond its status code and timing)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pokna.outbox.events import EventType

_ENDPOINT_EXAMPLE: dict[str, Any] = {
    "id": "whep_8d1f3c5a7b9e4d2f8a6c4e2b0d9f7a5c",
    "object": "webhook_endpoint",
    "url": "https://app.example/pokna/webhooks",
    "description": "turns and settlements for the lobby",
    "event_types": ["game.turn", "game.settled"],
    "enabled": True,
    "previous_secret_expires_at": "2026-12-02T14:00:00Z",
    "created_at": "2026-12-01T14:00:00Z",
    "updated_at": "2026-12-01T14:00:00Z",
}


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    DELIVERED = "delivered"
    FAILED = "failed"


class AttemptError(StrEnum):
    """Why an attempt failed, in our words: the receiver's body is never kept or shown."""

    HTTP_STATUS = "http_status"
    TIMEOUT = "timeout"
    CONNECTION = "connection_error"
    UNSAFE_ADDRESS = "unsafe_address"


class WebhookEndpointOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [_ENDPOINT_EXAMPLE]})

    id: str = Field(description="The endpoint's id (`whep_...`).")
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    url: str = Field(description="Where the events are POSTed.")
    description: str | None = Field(description="A note for people; not sent anywhere.")
    event_types: list[EventType] = Field(description="The event types sent to this endpoint.")
    enabled: bool = Field(description="A disabled endpoint gets no new deliveries and sends none.")
    previous_secret_expires_at: datetime | None = Field(
        description="After a rotation: until when the previous secret signs too (a second signature); "
        "after rotations within one overlap, until when the last of the earlier secrets does (each signs "
        "until the end its own rotation promised)."
    )
    created_at: datetime
    updated_at: datetime


class WebhookEndpointSecretOut(WebhookEndpointOut):
    """The endpoint with its signing secret: answered only when the endpoint is made or its secret rotated."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{**_ENDPOINT_EXAMPLE, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]
        }
    )

    secret: str = Field(
        description="`whsec_` + base64: verify each message's `webhook-signature` with it. Shown only now."
    )


class WebhookDeliveryOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "whdl_2c4e6a8b0d1f3e5a7c9b2d4f6a8c0e1b",
                    "object": "webhook_delivery",
                    "endpoint_id": "whep_8d1f3c5a7b9e4d2f8a6c4e2b0d9f7a5c",
                    "message_id": "msg_4a6c8e0b2d1f3a5c7e9b1d3f5a7c9e0b",
                    "event_type": "game.turn",
                    "status": "pending",
                    "attempts": 2,
                    "attempt_limit": 18,
                    "next_attempt_at": "2026-12-01T14:00:20Z",
                    "last_attempt_at": "2026-12-01T14:00:05Z",
                    "last_status_code": 503,
                    "last_duration_ms": 41,
                    "last_error": "http_status",
                    "delivered_at": None,
                    "created_at": "2026-12-01T14:00:00Z",
                }
            ]
        }
    )

    id: str = Field(description="The delivery's id (`whdl_...`).")
    object: Literal["webhook_delivery"] = "webhook_delivery"
    endpoint_id: str
    message_id: str = Field(description="The event's `webhook-id`: the same on every attempt.")
    event_type: EventType
    status: DeliveryStatus = Field(
        description="pending (waiting for its next attempt), sending (an attempt is in flight), "
        "delivered (a 2xx answer) or failed (every attempt failed; retry it to try once more)."
    )
    attempts: int = Field(description="Attempts made so far.")
    attempt_limit: int = Field(description="After this many failed attempts the delivery is failed.")
    next_attempt_at: datetime | None = Field(description="When the next attempt is due, while pending.")
    last_attempt_at: datetime | None
    last_status_code: int | None = Field(description="The HTTP status of the last answer, if one came.")
    last_duration_ms: int | None = Field(description="How long the last attempt took.")
    last_error: AttemptError | None = Field(description="Why the last attempt failed, if it did.")
    delivered_at: datetime | None
    created_at: datetime


class WebhookEndpointDeletedOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"id": "whep_8d1f3c5a7b9e4d2f8a6c4e2b0d9f7a5c", "object": "webhook_endpoint", "deleted": True}
            ]
        }
    )

    id: str = Field(description="The endpoint that was deleted, with its deliveries.")
    object: Literal["webhook_endpoint"] = "webhook_endpoint"
    deleted: Literal[True] = True
