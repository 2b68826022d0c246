"""Provably fair rolls (protocol pokna-hmac-sha256-v1): pure functions, no I/O.

Shared by the service, the `pokna` CLI and the offline verifier, so it imports nothing from the API, the
database or the ledger, and reads no file, socket or clock. Randomness (seeds, AEAD nonces) comes from
`secrets`, the only thing it takes from the operating system.
"""
