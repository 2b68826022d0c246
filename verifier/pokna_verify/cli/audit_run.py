"""What `pokna-verify audit` (and the service's `pokna audit verify`, the same code) does once it runs: read
the file, know it by its first record (an audit bundle's header, or else a ledger export), check it, print
the report; the exit code is the verdict's (usage.AUDIT_EXIT_CODES says each)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pokna_verify.bounded_input import InputLimitError
from pokna_verify.bundle.records import is_bundle
from pokna_verify.bundle.report import Verdict
from pokna_verify.bundle.scan import verify_bundle_stream
from pokna_verify.cli.audit_answers import answer_bundle, answer_export
from pokna_verify.cli.audit_stream import ProgressReader, first_line, named, open_source, rewound
from pokna_verify.cli.beacon_chains import trusted_chains
from pokna_verify.cli.exit_codes import EXIT_UNUSABLE
from pokna_verify.cli.input_files import (
    UnusableInputError,
    public_key_argument,
    read_json_object,
    read_previous_checkpoint,
)
from pokna_verify.cli.progress import StderrProgress
from pokna_verify.cli.proof_inputs import read_key_ring
from pokna_verify.cli.terminal import say
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.errors import FairnessError
from pokna_verify.fairness.keyring import KeyRing
from pokna_verify.ledger.check import UnusableCheckpoint
from pokna_verify.ledger.findings import AuditReport
from pokna_verify.ledger.scan import usable_cores, verify_export_stream


def run_audit(
    source: Path,
    *,
    keys: str | None,
    checkpoint: Path | None,
    public_key: str | None,
    beacon_chains: Sequence[Path],
    processes: int | None,
    progress: bool | None,
    as_json: bool,
    previous_checkpoint: Path | None = None,
) -> int:
    try:
        ring = read_keys(keys)
        previous = read_previous_checkpoint(previous_checkpoint) if previous_checkpoint else None
        chains = trusted_chains(beacon_chains)
        with open_source(source) as opened:
            first = first_line(opened)
            if not first.strip():
                raise UnusableInputError(f"{source} is empty: there is nothing to verify")
            stream = rewound(opened, first)
            shown = StderrProgress(progress)
            if is_bundle(first):
                if checkpoint is not None or public_key is not None:
                    raise UnusableInputError(
                        "a bundle carries its checkpoints; check its signatures with --keys, not --public-key"
                    )
                try:
                    bundle = verify_bundle_stream(
                        stream,
                        keys=ring,
                        beacon_chains=chains,
                        processes=processes or usable_cores(),
                        previous_checkpoint=previous,
                        progress=lambda lines, _: shown.show(f"{lines:,} records read"),
                    )
                finally:
                    shown.done()
                if bundle.transactions == 0 and bundle.verdict is not Verdict.INVALID:
                    raise UnusableInputError(
                        f"the bundle {source} holds no transactions: there is nothing to verify"
                    )
                return answer_bundle(source, bundle, as_json)
            if previous is not None:
                raise UnusableInputError(
                    "--previous-checkpoint checks the public log an audit bundle carries; a ledger export has none"
                )
            if beacon_chains:
                raise UnusableInputError(
                    "--beacon-chain checks the beacon-mode games of an audit bundle; a ledger export holds no games"
                )
            reader = ProgressReader(stream, shown) if shown.enabled else stream
            try:
                report = _verify_export(reader, ring, checkpoint, public_key, processes)
            finally:
                shown.done()
            if report.transactions == 0 and report.valid:
                raise UnusableInputError(
                    f"the export {source} holds no transactions: there is nothing to verify"
                )
    except InputLimitError as error:  # a line past a limit: named with the file it is in
        return _unusable(f"{named(source)}: {error}", as_json)
    except (UnusableInputError, UnusableCheckpoint, FairnessError, CryptoError) as error:
        return _unusable(str(error), as_json)
    return answer_export(source, report, as_json)


def _unusable(said: str, as_json: bool) -> int:
    if as_json:
        print(json.dumps({"valid": None, "error": said}))
    else:
        say(f"UNUSABLE INPUT: {said}", file=sys.stderr)
    return EXIT_UNUSABLE


def read_keys(source: str | None) -> KeyRing | None:
    return None if source is None else read_key_ring(source)


def _verify_export(
    stream: Any,
    ring: KeyRing | None,
    checkpoint: Path | None,
    public_key: str | None,
    processes: int | None,
) -> AuditReport:
    if public_key is not None and checkpoint is None:
        raise UnusableInputError("--public-key checks a --checkpoint; give both")
    if ring is not None and checkpoint is None:
        raise UnusableInputError("--keys checks a --checkpoint's signature for an export; give --checkpoint")
    checkpoint_json = read_json_object(checkpoint, "checkpoint") if checkpoint else None
    key = public_key_argument(public_key) if public_key else None
    if ring is not None and checkpoint_json is not None:
        key = ring.get(str(checkpoint_json.get("key_id")))
    return verify_export_stream(stream, checkpoint=checkpoint_json, public_key=key, processes=processes)
