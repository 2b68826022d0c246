// Real proofs made by the service, in both fairness modes, and tampered copies of them, judged by the checking
// core as an integrator imports it (`pokna-verify`), under Node: each must get the verdict, and every check
// the status, that the Python verifier gives it (and, for a failed check other than the signature and the
// replay, the same words). The cases, with what Python said of each, are in the JSON file named by
// POKNA_PROOF_CASES (tests/fairness/test_fairness_js_core.py writes it). No network: the documents are given.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { chainFromDrandInfo, verifyDocument } from "pokna-verify";

const { cases } = JSON.parse(readFileSync(process.env.POKNA_PROOF_CASES, "utf8"));
assert.ok(cases.length > 0, "no cases given");

for (const { name, document, keyRing, receipt, beaconChainInfos, expected } of cases) {
  test(name, async () => {
    const report = await verifyDocument(document, {
      keyRing,
      receipt: receipt ?? undefined,
      beaconChains: beaconChainInfos.map(chainFromDrandInfo),
    });
    assert.deepEqual(
      report.checks.map((check) => [check.name, check.status]),
      expected.checks,
    );
    assert.equal(report.verdict.state, expected.state);
    for (const check of report.checks) {
      if (check.name in expected.messages) assert.equal(check.message, expected.messages[check.name], check.name);
    }
    if (expected.state === "valid") {
      assert.deepEqual(report.replay.transfers, report.proof.transfers);
      assert.equal(report.rows.length, report.proof.rolls.length);
      assert.ok(report.rows.every((row) => row.match));
    }
  });
}
