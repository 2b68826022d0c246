"""What a tenant sends to manage its webhook endpoints."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from pokna.api.fields import NoNul
from pokna.outbox.events import EventType

Url = Annotated[
    str,
    StringConstraints(min_length=8, max_length=2048, pattern=r"^https?://"),
    NoNul,
    Field(
        description="Where events are POSTed. https in production, where it must also resolve to a public "
        "address; http is accepted in development and tests.",
        examples=["https://app.example/pokna/webhooks"],
    ),
]
Description = Annotated[
    str, StringConstraints(max_length=200), NoNul, Field(description="A note for people; not sent anywhere.")
]
EventTypes = Annotated[
    list[EventType],
    Field(
        min_length=1,
        description="The event types to send to this endpoint; a type named twice counts once.",
    ),
    # A set, answered sorted: a repeat is no second subscription, so it is dropped, not counted toward a
    # limit (any distinct list is within the 8 types) nor refused (creations that repeated one passed).
    AfterValidator(lambda event_types: list(dict.fromkeys(event_types))),
]


class WebhookEndpointCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "url": "https://app.example/pokna/webhooks",
                    "event_types": ["game.turn", "game.settled"],
                    "description": "turns and settlements for the lobby",
                }
            ]
        },
    )

    url: Url
    event_types: EventTypes
    description: Description | None = None


class WebhookEndpointUpdate(BaseModel):
    """Only the fields given change. `enabled: false` disables the endpoint (its deliveries wait);
    `enabled: true` enables it again. `description: null` removes the description; a null `url`,
    `event_types` or `enabled` changes nothing."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"enabled": False}, {"event_types": ["game.turn"]}]},
    )

    url: Url | None = None
    event_types: EventTypes | None = None
    description: Description | None = None
    enabled: bool | None = Field(
        default=None, strict=True, description="false disables the endpoint, true enables it."
    )

    @model_validator(mode="after")
    def _changes_something(self) -> WebhookEndpointUpdate:
        if not self.model_fields_set:
            raise ValueError("give at least one of url, event_types, description, enabled")
        return self
