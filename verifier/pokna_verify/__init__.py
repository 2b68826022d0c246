"""Pokna's checks, for anyone: the proof of a game (both fairness modes), the replay of its rules, the
ledger's export and the audit bundle, each checked offline from the file alone, from Python or with the
`pokna-verify` command (`cli`: `pokna-verify proof`, `pokna-verify audit`).

This package is also the service's functional core: the rules (`game`), the fairness scheme
(`fairness`), the canonical JSON and signatures (`crypto`), and the formats of the ledger's export
(`ledger`) and of the audit bundle (`bundle`) with their checks. It imports no web framework, no ORM, no
database driver; the service (`pokna`) depends on it, never the other way round.
"""
