"""`pokna-verify log watch URL --state FILE`: one witness step over a tenant's public log.

Fetch the latest checkpoint, check its signature with the operator's published keys (or `--keys`), and
judge it against the one kept in FILE (pokna_verify.tlog.witness), asking the log for the consistency proof
between the two sizes. A fork or a rollback exits 1 and leaves FILE as it was, so the evidence stays; a
checkpoint that extends the kept one replaces it. Run it from cron; compare state files with other witnesses
by running it with theirs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pokna_verify.bundle.log_records import open_checkpoint
from pokna_verify.cli.exit_codes import EXIT_INVALID, EXIT_UNUSABLE, EXIT_VALID
from pokna_verify.cli.input_files import UnusableInputError
from pokna_verify.cli.log_fetch import fetch_text, judged, keys_url_of, log_base
from pokna_verify.cli.log_state import kept_checkpoint, origin_problem, read_state, write_state
from pokna_verify.cli.proof_inputs import read_key_ring
from pokna_verify.cli.terminal import say
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.tlog.errors import LogError, MalformedNoteError, SignatureError
from pokna_verify.tlog.witness import Judgement


def run_log_watch(url: str, state: Path, *, keys: str | None, as_json: bool) -> int:
    try:
        base = log_base(url)
        ring = read_key_ring(keys if keys is not None else keys_url_of(base))
        note = fetch_text(f"{base}/checkpoint", "checkpoint")
        kept_state = read_state(state)
        try:
            latest = open_checkpoint(note, ring)
        except SignatureError as error:
            return _said(as_json, "bad_signature", f"{base}/checkpoint: {error}", EXIT_INVALID)
        renamed = origin_problem(kept_state, base, latest.origin)
        if renamed is not None:
            return _said(as_json, "wrong_origin", renamed, EXIT_INVALID)
        kept = kept_checkpoint(kept_state, latest.origin, state)
        witnessed = judged(base, kept, latest)
    except (UnusableInputError, CryptoError, MalformedNoteError, LogError) as error:
        return _said(as_json, "unusable", str(error), EXIT_UNUSABLE)
    accepted = witnessed.judgement in (Judgement.FIRST, Judgement.EXTENDED)
    if accepted:
        kept_state.keep(latest.origin, note, base)
    if accepted or (witnessed.judgement is Judgement.SAME and kept_state.pin_address(latest.origin, base)):
        try:
            write_state(state, kept_state)
        except UnusableInputError as error:
            return _said(as_json, "unusable", str(error), EXIT_UNUSABLE)
    code = EXIT_VALID if witnessed.judgement.consistent else EXIT_INVALID
    extra = {"origin": latest.origin, "size": latest.size, "kept_size": None if kept is None else kept.size}
    return _said(as_json, str(witnessed.judgement), witnessed.detail, code, extra)


def _said(as_json: bool, verdict: str, detail: str, code: int, extra: dict[str, object] | None = None) -> int:
    if as_json:
        print(
            json.dumps(
                {"verdict": verdict, "consistent": code == EXIT_VALID, "detail": detail, **(extra or {})}
            )
        )
    elif code == EXIT_UNUSABLE:
        say(f"UNUSABLE INPUT: {detail}", file=sys.stderr)
    else:
        say(f"{verdict.upper().replace('_', ' ')}: {detail}")
    return code
