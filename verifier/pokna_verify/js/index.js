// pokna-verify in JavaScript: the checks of Pokna's browser page as an ES module that runs in a browser and
// under Node 20 or newer alike, with no dependency but the vendored BLS library for beacon-mode proofs
// (docs/fairness.md, "With Node or any JavaScript"). It fetches nothing: the caller hands it the documents.
//
//   import { verifyDocument } from "pokna-verify";
//   const report = await verifyDocument(linkOrProof, { keyRing, receipt, beaconChains });
//   report.verdict.state; // "valid" | "invalid" | "partial" | "unrevealed"; report.checks: [{name, status, message}]
//
// Every check has the name and the failure message of the Python verifier (pokna_verify.fairness).
export { CHECK_ORDER, verdictOf, verifyDocument } from "./verification.js";
export { LINK_OBJECT, PROOF_DOCUMENT, RECEIPT_DOCUMENT, Unusable } from "./documents.js";
export { replayRules } from "./replay.js";
export { VIGO, rakeTermsOf } from "./rules.js";
export {
  BEACON_PROTOCOL,
  HEX64,
  PROTOCOL,
  colorOf,
  computeBeaconRoll,
  computeRoll,
  gameClientSeed,
  serverSeedHash,
} from "./protocol.js";
export { QUICKNET, chainFromDrandInfo, firstRoundAfter, isBeaconProof, roundProblem, roundPublishedAt } from "./beacon.js";
export { canonicalize, isInteger, isObject } from "./json.js";
export { LEAF_KIND, b64Decode, checkPublicLog, gameLeafEntry, inclusionProblem, leafHash, nodeHash, noteKeyHash, openNote, parseCheckpoint } from "./tlog.js";
