"""Exactly-once requests: the records behind `Idempotency-Key` (claims, stored responses, their purge).

`service` is the one implementation, on the driver; the HTTP side (`pokna.api.idempotency`) reads the
header, fingerprints the request and shapes the response.
"""
