"""What `pokna-verify proof` (and the service's `pokna verify`, the same code) does once it runs: read SOURCE,
gather the receipt and keys to trust, run the checks, print the report; the exit code is the verdict's."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pokna_verify.bounded_input import InputLimitError
from pokna_verify.cli.beacon_chains import trusted_chains
from pokna_verify.cli.exit_codes import EXIT_INVALID, EXIT_UNUSABLE
from pokna_verify.cli.input_files import UnusableInputError
from pokna_verify.cli.log_carried import check_carried_inclusion
from pokna_verify.cli.log_inclusion import check_log_inclusion
from pokna_verify.cli.proof_inputs import gather_evidence, read_subject
from pokna_verify.cli.proof_report import (
    EXIT_CODES,
    Verdict,
    json_report,
    print_report,
    revealed_report,
    unrevealed_report,
    verdict_of,
)
from pokna_verify.cli.proof_source import where_to_read
from pokna_verify.cli.terminal import say
from pokna_verify.crypto.errors import CryptoError
from pokna_verify.fairness.errors import FairnessError

LABELS = {"included": "INCLUDED", "not_logged": "NOT LOGGED YET", "failed": "FAILED", "unusable": "UNUSABLE"}


def run_proof(
    source: str,
    *,
    server: str | None = None,
    public_key: Path | None,
    keys: str | None,
    receipt: Path | None,
    as_json: bool,
    beacon_chains: Sequence[Path] = (),
    log: str | None = None,
    state: Path | None = None,
) -> int:
    try:
        if public_key is not None and keys is not None:
            raise UnusableInputError("give --public-key or --keys, not both")
        read_from = where_to_read(source, server)
        subject = read_subject(read_from)
        evidence = gather_evidence(read_from, subject, public_key, keys, receipt)
        if beacon_chains:
            evidence = dataclasses.replace(evidence, beacon_chains=trusted_chains(beacon_chains))
        if subject.proof is not None:
            report = revealed_report(subject.kind, subject.proof, evidence)
        else:
            report = unrevealed_report(subject, evidence)
    except (UnusableInputError, InputLimitError, FairnessError, CryptoError) as error:
        if as_json:
            print(json.dumps({"verdict": str(Verdict.UNUSABLE), "valid": None, "error": str(error)}))
        else:
            say(f"UNUSABLE INPUT: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    verdict = verdict_of(subject, report)
    logged = None
    if subject.proof is not None and log is not None:
        logged = check_log_inclusion(subject.proof, log, evidence.keys, state)
    elif subject.proof is not None and subject.public_log is not None:
        logged = check_carried_inclusion(subject.proof, subject.public_log, evidence.keys, state, read_from)
    if as_json:
        document = json_report(source, read_from, subject, evidence, report, verdict)
        if logged is not None:
            document["public_log"] = logged.to_json()
        print(json.dumps(document, indent=2))
    else:
        print_report(source, read_from, subject, evidence, report, verdict)
        if logged is not None:
            say(f"public log: {LABELS[logged.status]}: {logged.detail}")
    if logged is not None and logged.status == "failed":
        return EXIT_INVALID
    return EXIT_CODES[verdict]
