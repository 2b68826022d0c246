"""The rules of Pokna as a pure, deterministic state machine: no I/O, no clock, no randomness of its own."""
