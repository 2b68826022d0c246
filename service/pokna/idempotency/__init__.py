"""Exactly-once requests: the records behind `Idempotency-Key` (claims, stored responses, their purge).

`service` is the one implementation, on the driver; `keyed` is the transaction every keyed write on the
driver runs in (claim or replay, BEGIN with the hold and the reads, COMMIT, release on failure); the HTTP
side (`pokna.api.idempotency`) reads the header, fingerprints the request and shapes the response.
"""
