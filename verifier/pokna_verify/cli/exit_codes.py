"""Exit codes shared by the offline verifiers (`pokna-verify`, and the service's `pokna verify`, `pokna audit
verify`, `pokna roll`); a module of its own so that the commands that need only these numbers import nothing
else. Usage mistakes exit 2 as well (argparse's and Click's own)."""

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNUSABLE = 2
EXIT_NOT_REVEALED = 3
EXIT_PARTLY_VERIFIED = 4
"""Nothing failed, but not every check ran (no keys, no receipt): not a pass, so that a script checking
the exit code never accepts a proof whose signature or commitment nobody checked."""
