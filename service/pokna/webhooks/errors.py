"""The webhooks' refusals, each with a stable code (one handler makes them problem+json)."""

from __future__ import annotations

from pokna.errors import Conflict, InvalidRequest, NotFound


class EndpointNotFound(NotFound):
    code = "webhook_endpoint_not_found"
    title = "No such webhook endpoint"


class DeliveryNotFound(NotFound):
    code = "webhook_delivery_not_found"
    title = "No such webhook delivery"


class DeliveryInFlight(Conflict):
    code = "webhook_delivery_in_flight"
    title = "An attempt of this delivery is in flight"


class UnsafeWebhookUrl(InvalidRequest):
    code = "unsafe_webhook_url"
    title = "This URL may not receive webhooks"


class SecretRotationLimit(Conflict):
    code = "webhook_secret_rotation_limit"
    title = "The endpoint signs with as many secrets as it may"


class EndpointLimitReached(Conflict):
    code = "webhook_endpoint_limit_reached"
    title = "The tenant has as many webhook endpoints as it may"
