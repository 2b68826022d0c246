"""Exactly-once requests: the records behind `Idempotency-Key` (claims, stored responses, their purge).

`service` decides and draws the transaction boundaries; `repository` holds every query. The HTTP side
(`pokna.api.idempotency`) only reads the header, fingerprints the request and shapes the response.
"""
