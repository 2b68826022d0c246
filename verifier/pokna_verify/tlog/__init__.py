"""The tenant's public log of finished games: an RFC 9162 Merkle tree and C2SP signed checkpoints.

A player's proof shows one game was fair; the log shows every player and auditor the same, complete, only
ever growing list of games (issue 47). Pure: no I/O, so the service, `pokna-verify` and tests share it.
"""
