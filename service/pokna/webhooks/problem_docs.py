"""The problems the webhook endpoints' operations can answer, built from the errors that raise them
(pokna.api.problem_docs has the mechanism and the kernel's own)."""

from __future__ import annotations

from pokna.api.problem_docs import of
from pokna.webhooks.errors import (
    DeliveryInFlight,
    DeliveryNotFound,
    EndpointLimitReached,
    EndpointNotFound,
    SecretRotationLimit,
    UnsafeWebhookUrl,
)
from pokna.webhooks.policy import MAX_ENDPOINTS, MAX_LIVE_SECRETS

ENDPOINT_NOT_FOUND = of(EndpointNotFound, "no webhook endpoint whep_0c1d2e3f")
DELIVERY_NOT_FOUND = of(DeliveryNotFound, "no delivery whdl_0c1d2e3f of webhook endpoint whep_0c1d2e3f")
DELIVERY_IN_FLIGHT = of(
    DeliveryInFlight, "delivery whdl_0c1d2e3f is being attempted; ask again once it is done"
)
UNSAFE_WEBHOOK_URL = of(UnsafeWebhookUrl, "webhook URLs must be https in production")
ENDPOINT_LIMIT_REACHED = of(
    EndpointLimitReached,
    f"a tenant has at most {MAX_ENDPOINTS} webhook endpoints and this one has {MAX_ENDPOINTS}; delete one "
    "to make another",
)
SECRET_ROTATION_LIMIT = of(
    SecretRotationLimit,
    f"an endpoint signs with at most {MAX_LIVE_SECRETS} secrets at once, and each of its "
    f"{MAX_LIVE_SECRETS - 1} earlier ones is still promised to sign; rotate again after "
    "2026-12-02T14:00:00Z, when the oldest one's overlap ends",
)
