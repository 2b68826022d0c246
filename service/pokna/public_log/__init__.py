"""The tenant's public log of finished games (issue 47; docs/fairness.md, "The public log").

An append-only RFC 9162 Merkle tree per tenant, one leaf per finished game (pokna_verify.tlog.game_leaf),
appended off the request path by the sequencer (sequencer.py, worker.py) and signed as C2SP checkpoints
that also commit to the tenant's ledger chain heads. The hashing, the proofs and the note format are the
verifier's (pokna_verify.tlog), so the service and every checker compute the same bytes.
"""
