"""The audit bundle checked offline: one pass over a bundle (docs/audit.md) ties every ledger movement to
a verified game, a deposit or a withdrawal. Pure checking: no database, no network; the ledger's rules
(pokna_verify.ledger) and the proofs' (pokna_verify.fairness) are reused as they are. The bundle is
written by the service (pokna.bundles)."""
