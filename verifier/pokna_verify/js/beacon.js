// The beacon mode (docs/fairness.md, section 1b; as pokna_verify.fairness.beacon and beacon_proof): which
// proofs are beacon-mode proofs, the `beacon` check (every roll's drand round verifies with BLS under a trusted
// chain's key and is the first round published after the roll's action was accepted), and a drand /info
// document read as a chain.
import { check, quoted } from "./check-result.js";
import { hexBytes, sha256Bytes, toHex } from "./crypto.js";
import { canonicalize, isInteger, isObject } from "./json.js";
import { BEACON_PROTOCOL, PROTOCOL } from "./protocol.js";

export const BEACON_SCHEME = "bls-unchained-g1-rfc9380";
const BEACON_DST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";
// drand's quicknet, as pokna_verify.fairness.beacon.QUICKNET pins it: the only public beacon trusted unless the
// caller names another chain (verifyDocument's beaconChains: the page's ?beacon_chain=, `pokna verify --beacon-chain`).
export const QUICKNET = {
  scheme: BEACON_SCHEME,
  chain_hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
  public_key:
    "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510" +
    "d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a",
  genesis_time: 1692803367,
  period: 3,
};

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HEX = /^[0-9a-f]*$/;

// @noble/curves' BLS12-381, vendored beside this file and imported only when a proof names drand rounds.
const NOBLE_URL = new URL("noble-bls12-381.js", import.meta.url).href;
let noble = null;
const loadNoble = () => (noble ??= import(NOBLE_URL));

// A proof that says anything of beacons is judged as one, so a half-edited mode cannot skip the check.
export const isBeaconProof = (proof) =>
  proof.protocol === BEACON_PROTOCOL ||
  (proof.fairness_mode ?? "stake") !== "stake" ||
  "beacon_chain" in proof ||
  proof.rolls.some((entry) => "beacon" in entry || "accepted_at" in entry);

export function modeProblems(proof) {
  if (!isBeaconProof(proof)) {
    return proof.protocol === PROTOCOL ? [] : [`protocol is '${proof.protocol}', this verifier knows only '${PROTOCOL}' and '${BEACON_PROTOCOL}'`];
  }
  const problems = [];
  if (proof.protocol !== BEACON_PROTOCOL) problems.push(`protocol is '${proof.protocol}', a beacon-mode proof's is '${BEACON_PROTOCOL}'`);
  if (proof.fairness_mode !== "beacon") problems.push(`fairness_mode is ${quoted(proof.fairness_mode ?? "stake")}, a beacon-mode proof's is 'beacon'`);
  if (!isObject(proof.beacon_chain)) problems.push("beacon_chain is missing");
  return problems;
}

export const roundPublishedAt = (chain, round) => (chain.genesis_time + (round - 1) * chain.period) * 1000;
export const firstRoundAfter = (chain, acceptedAtMs) => {
  const sinceGenesis = acceptedAtMs - chain.genesis_time * 1000;
  return sinceGenesis < 0 ? 1 : Math.floor(sinceGenesis / (chain.period * 1000)) + 2;
};

// RFC 3339, UTC, milliseconds: one spelling per instant, as the proof writes it.
function parseTimestamp(text) {
  const ms = TIMESTAMP.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== text) throw new Error(`'${text}' is not a UTC time written YYYY-MM-DDTHH:MM:SS.mmmZ`);
  return ms;
}

function hexProblem(name, value, length) {
  return value.length === length && HEX.test(value) ? null : `${name} is not ${length} lowercase hexadecimal characters`;
}

function chainProblem(chain) {
  if (chain.scheme !== BEACON_SCHEME) return `scheme is '${chain.scheme}'; this verifier knows only '${BEACON_SCHEME}'`;
  if (chain.period < 1) return `period is ${chain.period}, not a positive number of seconds`;
  return hexProblem("public_key", chain.public_key, 192);
}

// Why a round is not one the chain published: the BLS signature on G1 of sha256(round, 8 bytes big-endian)
// must verify under the public key (G2), and the randomness must be sha256(signature).
export async function roundProblem(chain, round) {
  if (!isInteger(round.round) || round.round < 1) return `round ${round.round} is not a round number (1 to 2^64 - 1)`;
  const malformed = hexProblem("signature", round.signature, 96) || hexProblem("randomness", round.randomness, 64);
  if (malformed) return malformed;
  let bls;
  try {
    bls = (await loadNoble()).bls12_381.shortSignatures;
  } catch (error) {
    return `the BLS verifier (noble-bls12-381.js) could not be loaded: ${error.message}`;
  }
  const number = new Uint8Array(8);
  new DataView(number.buffer).setBigUint64(0, BigInt(round.round));
  const message = bls.hash(await sha256Bytes(number), BEACON_DST);
  let verifies;
  try {
    verifies = bls.verify(hexBytes(round.signature), message, hexBytes(chain.public_key));
  } catch (error) {
    return `signature or public key is not a valid curve point (${error.message})`;
  }
  if (!verifies) return `the BLS signature does not verify for round ${round.round} under the chain's public key`;
  const derived = toHex(await sha256Bytes(hexBytes(round.signature)));
  if (derived !== round.randomness) return `randomness is ${round.randomness}, sha256(signature) is ${derived}`;
  return null;
}

function timingProblems(label, chain, acceptedAt, round) {
  let acceptedMs;
  try {
    acceptedMs = parseTimestamp(acceptedAt);
  } catch (error) {
    return [`${label}: accepted_at: ${error.message}`];
  }
  const publishedMs = roundPublishedAt(chain, round);
  const expected = firstRoundAfter(chain, acceptedMs);
  if (publishedMs <= acceptedMs) {
    return [`${label}: round ${round} was published at ${new Date(publishedMs).toISOString()}, not after the action was accepted at ${acceptedAt}: it was known before the roll was drawn`];
  }
  if (round !== expected) return [`${label}: round ${round} is not the first round published after the acceptance at ${acceptedAt} (that is round ${expected})`];
  return [];
}

const CHAIN_FIELDS = ["scheme", "chain_hash", "public_key", "genesis_time", "period"];
const sameChain = (a, b) => CHAIN_FIELDS.every((name) => a[name] === b[name]);

// `trusted`: quicknet, and the chains the caller trusts besides (the page: the one its address named, if read).
export async function checkBeacon(proof, trusted) {
  const chain = proof.beacon_chain;
  if (!isObject(chain)) return check("beacon", ["beacon_chain is missing: no round can be checked"]);
  const broken = chainProblem(chain);
  if (broken) return check("beacon", [`beacon_chain: ${broken}`]);
  const problems = [];
  if (!trusted.some((known) => sameChain(known, chain))) {
    const known = trusted.map((k) => `${k.chain_hash.slice(0, 16)}… (key ${k.public_key.slice(0, 16)}…)`).join(", ");
    problems.push(
      `beacon_chain ${chain.chain_hash} with public key ${chain.public_key.slice(0, 16)}… is not a public beacon this verifier trusts ` +
        `(${known || "none"}): whoever holds its key could have chosen every round`,
    );
  }
  const verified = new Map(); // one pairing per distinct round, however many rolls use it
  for (const entry of proof.rolls) {
    const label = `roll nonce ${entry.nonce}`;
    if (!isObject(entry.beacon) || typeof entry.accepted_at !== "string") {
      problems.push(`${label}: no beacon round or no acceptance time recorded`);
      continue;
    }
    const key = canonicalize(entry.beacon);
    if (!verified.has(key)) verified.set(key, await roundProblem(chain, entry.beacon));
    if (verified.get(key)) {
      problems.push(`${label}: round ${entry.beacon.round}: ${verified.get(key)}`);
      continue;
    }
    problems.push(...timingProblems(label, chain, entry.accepted_at, entry.beacon.round));
  }
  const rounds = new Set(proof.rolls.filter((entry) => isObject(entry.beacon)).map((entry) => canonicalize(entry.beacon))).size;
  return check(
    "beacon",
    problems,
    `${rounds} drand rounds of chain ${chain.chain_hash.slice(0, 16)}… verify (BLS), each published after the action that drew its rolls was accepted`,
  );
}

// A relay's /info answer in either of drand's spellings (v1: hash/schemeID, v2: chain_hash/scheme), as
// pokna_verify.fairness.beacon.BeaconChain.from_drand_info reads it. Throws naming what is wrong.
export function chainFromDrandInfo(info) {
  if (!isObject(info)) throw new Error("not a JSON object");
  const chain = {
    scheme: info.schemeID ?? info.scheme,
    chain_hash: info.hash ?? info.chain_hash,
    public_key: info.public_key,
    genesis_time: info.genesis_time,
    period: info.period,
  };
  // In the order Python reads them, so both name the same first problem.
  if (typeof chain.public_key !== "string") throw new Error("public_key: missing or not a string");
  for (const name of ["genesis_time", "period"]) if (!isInteger(chain[name])) throw new Error(`${name}: missing or not an integer`);
  if (typeof chain.scheme !== "string") throw new Error("schemeID (or scheme): missing or not a string");
  if (typeof chain.chain_hash !== "string") throw new Error("hash (or chain_hash): missing or not a string");
  const broken = chainProblem(chain) || hexProblem("the chain hash", chain.chain_hash, 64);
  if (broken) throw new Error(broken);
  return chain;
}
