// The Ed25519 signatures of the proof and of the commitment receipt, and the receipt held against the proof
// (pokna_verify.fairness.verification): same game, protocol, commitment, terms, fairness mode and chain.
import { check, notRun, quoted } from "./check-result.js";
import { b64urlDecode, ed25519Key, ed25519Verifies, keyIdOf } from "./crypto.js";
import { RECEIPT_DOCUMENT } from "./documents.js";
import { canonicalize, isObject } from "./json.js";
import { BEACON_PROTOCOL, HEX64, PROTOCOL } from "./protocol.js";
import { rakeTermsOf } from "./rules.js";

// keys: {ring, reason}; ring null means no key ring could be had, and `reason` says why.
export async function checkSignature(name, document, keys) {
  if (!keys.ring) return notRun(name, keys.reason);
  const entry = (Array.isArray(keys.ring.keys) ? keys.ring.keys : []).find((key) => key && key.key_id === document.key_id);
  if (!entry) return check(name, [`key_id ${document.key_id} is not in the key ring`]);
  let raw;
  try {
    raw = b64urlDecode(entry.public_key);
  } catch (error) {
    return check(name, [`key ${entry.key_id}: public key is ${error.message}`]);
  }
  if (entry.algorithm !== "Ed25519" || raw.length !== 32 || (await keyIdOf(raw)) !== entry.key_id) {
    return check(name, [`key ring entry ${entry.key_id} is not an Ed25519 key with that id`]);
  }
  let signature;
  try {
    signature = b64urlDecode(document.signature);
  } catch (error) {
    return check(name, [`signature is ${error.message}`]);
  }
  if (signature.length !== 64) return check(name, [`an Ed25519 signature is 64 bytes, this one is ${signature.length}`]);
  let key;
  try {
    key = await ed25519Key(raw);
  } catch (error) {
    return notRun(name, `this browser has no WebCrypto Ed25519 (${error.name}); use pokna verify`);
  }
  const unsigned = { ...document };
  delete unsigned.signature;
  const ok = await ed25519Verifies(key, signature, unsigned);
  const retired = entry.status === "retired" ? " (a retired key)" : "";
  return check(name, ok ? [] : [`signature does not verify with key ${entry.key_id}`], `Ed25519 signature by ${entry.key_id}${retired} verifies`);
}

export async function checkReceipt(proof, receipt, keys) {
  if (!receipt.document) return notRun("receipt", receipt.reason);
  const given = receipt.document;
  const problems = [];
  const expected = { protocol: proof.protocol, document: RECEIPT_DOCUMENT, game_id: proof.game_id, server_seed_hash: proof.server_seed_hash };
  for (const [field, value] of Object.entries(expected)) {
    if (given[field] !== value) problems.push(`receipt ${field} is ${quoted(given[field])}, expected ${quoted(value)}`);
  }
  // The mode and the chain are committed to before play, so an operator cannot switch them afterwards.
  const promisedMode = given.fairness_mode ?? "stake";
  const mode = proof.fairness_mode ?? "stake";
  if (promisedMode !== mode) problems.push(`receipt fairness_mode is ${quoted(promisedMode)}, the proof's is ${quoted(mode)}`);
  if (canonicalize(given.beacon_chain ?? null) !== canonicalize(proof.beacon_chain ?? null)) problems.push("receipt beacon_chain differs from the proof's");
  // Seats may still fill up after creation, but the money terms are fixed when the commitment is made.
  for (const field of ["stake", "challenge_raise"]) {
    const promised = isObject(given.game) ? given.game[field] : undefined;
    if (promised !== proof.game[field]) problems.push(`receipt game.${field} is ${quoted(promised)}, the proof's is ${quoted(proof.game[field])}`);
  }
  // So are the rake terms; absent ones (a receipt from before rakes) mean no rake.
  const promisedRake = isObject(given.game) ? rakeTermsOf(given.game) : { rake_bps: undefined, rake_cap: undefined };
  const actualRake = rakeTermsOf(proof.game);
  for (const field of ["rake_bps", "rake_cap"]) {
    if (promisedRake[field] !== actualRake[field]) problems.push(`receipt game.${field} is ${quoted(promisedRake[field])}, the proof's is ${quoted(actualRake[field])}`);
  }
  const signature = await checkSignature("receipt", given, keys);
  if (signature.status === "fail") problems.push(`receipt ${signature.message}`);
  const suffix = signature.status === "pass" ? "" : ` (receipt signature not checked: ${signature.message})`;
  return check("receipt", problems, `the proof reveals the seed committed to at ${given.created_at} (${receipt.source})${suffix}`);
}

// Before the reveal only the commitment receipt can be checked: right kind of document, signed.
export async function checkCommitmentReceipt(receipt, keys) {
  if (!receipt.document) return notRun("receipt", receipt.reason);
  const given = receipt.document;
  const problems = [];
  if (given.protocol !== PROTOCOL && given.protocol !== BEACON_PROTOCOL) problems.push(`receipt protocol is ${JSON.stringify(given.protocol)}, expected "${PROTOCOL}" or "${BEACON_PROTOCOL}"`);
  if (given.document !== RECEIPT_DOCUMENT) problems.push(`receipt document is ${JSON.stringify(given.document)}, expected "${RECEIPT_DOCUMENT}"`);
  if (!HEX64.test(given.server_seed_hash)) problems.push("receipt server_seed_hash is not 64 lowercase hexadecimal characters");
  const signature = await checkSignature("receipt", given, keys);
  if (signature.status === "fail") problems.push(`receipt ${signature.message}`);
  const suffix = signature.status === "pass" ? `, ${signature.message}` : ` (receipt signature not checked: ${signature.message})`;
  return check("receipt", problems, `commitment ${given.server_seed_hash} made at ${given.created_at}${suffix}`);
}
