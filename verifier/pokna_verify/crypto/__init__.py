"""General cryptography and encodings shared by `fairness` (proofs, receipts) and `ledger` (hash chain,
checkpoints): RFC 8785 canonical JSON, Ed25519 signatures over it, and unpadded base64url. Pure; imports
nothing else of Pokna."""
