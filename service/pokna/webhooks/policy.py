"""How webhooks are delivered, from the settings: the one object the service and the worker take."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pokna.settings import Environment, Settings
from pokna.webhooks.addresses import UrlPolicy

MAX_RESPONSE_BYTES = 64 * 1024
MAX_ENDPOINTS = 16
"""A tenant's endpoints, enabled or disabled (Stripe's limit per account): every event fans out to each,
a delivery row and a request apiece. Deleting one frees its place."""
MAX_LIVE_SECRETS = 4
"""An endpoint's secrets signing at once: the current one and up to three earlier ones, each until the end
of the overlap its rotation promised. A header of four signatures is still short; a fifth rotation within
one overlap is refused rather than cutting short a promise made (pokna.webhooks.endpoints.rotate_secret)."""


@dataclass(frozen=True)
class DeliveryPolicy:
    urls: UrlPolicy
    timeout_seconds: float
    backoff_initial_seconds: float
    backoff_max_seconds: float
    attempt_limit: int
    secret_overlap: timedelta
    retention: timedelta
    max_response_bytes: int = MAX_RESPONSE_BYTES

    @classmethod
    def from_settings(cls, settings: Settings) -> DeliveryPolicy:
        production = settings.env is Environment.PRODUCTION
        return cls(
            urls=UrlPolicy(
                https_only=production,
                public_addresses_only=production,
                allowed_private_networks=settings.webhook_allowed_private_networks,
                local_receivers=not production,
            ),
            timeout_seconds=settings.webhook_timeout_seconds,
            backoff_initial_seconds=settings.webhook_backoff_initial_seconds,
            backoff_max_seconds=settings.webhook_backoff_max_seconds,
            attempt_limit=settings.webhook_attempt_limit,
            secret_overlap=timedelta(seconds=settings.webhook_secret_overlap_seconds),
            retention=timedelta(seconds=settings.webhook_retention_seconds),
        )

    @property
    def lease(self) -> timedelta:
        """How long a claimed delivery is its worker's: longer than any attempt can take (connect, send,
        the answer's head, and its capped body are each bounded by the timeout), so a second attempt can
        start only once the first is certainly over."""
        return timedelta(seconds=4 * self.timeout_seconds + 1)
