// One document verified whole: the checks in the order pokna verify prints them, and the verdict. It reads
// no page and fetches nothing: the caller hands it the document, the key ring, a receipt and chains to trust.
import { check, notRun } from "./check-result.js";
import { QUICKNET, checkBeacon, isBeaconProof, modeProblems } from "./beacon.js";
import { checkClientSeed, checkClientSeedFormat, checkCommitment, checkNonces, checkRolls, checkSeats } from "./checks.js";
import { MalformedProof, PROOF_DOCUMENT, checkShape, readDocument } from "./documents.js";
import { checkReplay, replayRules } from "./replay.js";
import { checkCommitmentReceipt, checkReceipt, checkSignature } from "./signatures.js";
import { checkPublicLog } from "./tlog.js";

export const CHECK_ORDER = ["protocol", "commitment", "client_seed_format", "client_seed", "seats", "nonces", "rolls", "signature", "receipt", "replay"];

// The whole verification of one document. options: {keyRing, keyRingReason,
// receipt (the player's own copy, if they kept it), beaconChains (drand chains to trust besides quicknet)}.
// Throws Unusable for input that is no proof at all.
export async function verifyDocument(value, options = {}) {
  const given = readDocument(value);
  const keys = options.keyRing ? { ring: options.keyRing } : { ring: null, reason: options.keyRingReason || "no key ring given" };
  const receipt = options.receipt
    ? { document: options.receipt, source: "your receipt" }
    : given.receipt
      ? { document: given.receipt, source: "the receipt in the link" }
      : { document: null, reason: "no commitment receipt given (the link carries one; a pasted proof needs yours)" };
  const report = { link: given.link, proof: given.proof, receipt: receipt.document, clientSeeds: given.clientSeeds, rows: [], replay: null };
  report.marks = { rolls: new Set(), rollIndexes: new Set(), transfers: new Set() };
  if (given.proof === null) {
    report.mode = "unrevealed";
    const waiting = "not revealed yet: the server seed is published when the game ends";
    report.checks = CHECK_ORDER.map((name) => (name === "receipt" ? null : notRun(name, waiting)));
    report.checks[CHECK_ORDER.indexOf("receipt")] = await checkCommitmentReceipt(receipt, keys);
    report.verdict = verdictOf(report);
    return report;
  }
  try {
    checkShape(given.proof);
  } catch (error) {
    if (!(error instanceof MalformedProof)) throw error;
    report.mode = "malformed";
    report.checks = [check("shape", [error.message]), ...CHECK_ORDER.map((name) => notRun(name, "the proof is not well formed"))];
    report.verdict = verdictOf(report);
    return report;
  }
  const proof = given.proof;
  report.mode = "revealed";
  const protocolProblems = modeProblems(proof);
  if (proof.document !== PROOF_DOCUMENT) protocolProblems.push(`document is '${proof.document}', not '${PROOF_DOCUMENT}'`);
  try {
    report.replay = replayRules(proof);
  } catch (error) {
    // A replay that crashes on this proof is a failed replay, not a crashed verifier.
    const problem = { message: `replay raised ${error.name}: ${error.message}`, where: {} };
    report.replay = { steps: [], transfers: [], outcome: null, rolled: [], problem, marks: { rolls: new Set(), transfers: new Set() } };
  }
  report.checks = [
    check("protocol", protocolProblems, proof.protocol),
    await checkCommitment(proof),
    checkClientSeedFormat(proof),
    await checkClientSeed(proof),
    checkSeats(proof, report.marks),
    checkNonces(proof, report.marks),
    await checkRolls(proof, report.rows),
    ...(isBeaconProof(proof) ? [await checkBeacon(proof, [QUICKNET, ...(options.beaconChains || [])])] : []),
    await checkSignature("signature", proof, keys),
    await checkReceipt(proof, receipt, keys),
    checkReplay(proof, report.replay),
  ];
  // Beside the checks, as beside the proof in the link: not logged yet fails nothing and leaves the verdict.
  if (given.link && given.link.public_log !== undefined) report.publicLog = await checkPublicLog(proof, given.link.public_log, options.keyRing || null);
  report.verdict = verdictOf(report);
  return report;
}

export function verdictOf(report) {
  const failed = [...report.checks, report.publicLog].filter((c) => c && c.status === "fail").map((c) => c.name);
  const skipped = report.checks.filter((c) => c.status === "not run").map((c) => c.name);
  if (failed.length) return { state: "invalid", text: "INVALID", detail: `failed: ${failed.join(", ")}` };
  if (report.mode === "unrevealed") {
    const status = report.link && report.link.status ? report.link.status.replace("_", " ") : "not over";
    return { state: "unrevealed", text: "NOT REVEALED YET", detail: `the game is ${status}; the seed is revealed when it ends` };
  }
  if (skipped.length) return { state: "partial", text: "PARTLY VERIFIED", detail: `nothing failed, but not run: ${skipped.join(", ")}` };
  return { state: "valid", text: "VALID", detail: "every check passed" };
}
