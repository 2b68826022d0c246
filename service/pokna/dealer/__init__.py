"""The game shell: load a game under lock, apply one pure rules step, persist state, rolls, events and
postings in the same transaction. No game state lives in the process between requests."""
