"""The audit bundle checked offline: one pass over a bundle (docs/audit.md) ties every ledger movement to
a verified game, a deposit or a withdrawal. Pure checking: no database, no network; the ledger's rules
(pokna.ledger.audit) and the proofs' (pokna.fairness) are reused as they are. The bundle is written by
the shell (pokna.bundles)."""
