"""An endpoint's URL check as the service runs it (pokna.webhooks.addresses.check_url_within), for tests
that are not async themselves."""

from __future__ import annotations

import asyncio

from pokna.webhooks.addresses import UrlPolicy, check_url_within

LOOKUP_SECONDS = 10.0  # the service's default webhook timeout


def check_url(url: str, policy: UrlPolicy) -> None:
    """The URL's form, and, where the policy wants public addresses only, where its host resolves now."""
    asyncio.run(check_url_within(url, policy, LOOKUP_SECONDS))
