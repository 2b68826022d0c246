// The public log in JavaScript (pokna_verify.tlog, docs/fairness.md section 6): RFC 9162's Merkle hashes and
// inclusion check, C2SP signed notes (Ed25519) and tlog-checkpoints, and a game's leaf rebuilt from its proof.
// All through WebCrypto: SHA-256 with crypto.subtle.digest, Ed25519 with crypto.subtle.verify.
import { check, notRun } from "./check-result.js";
import { b64urlDecode, sha256Bytes, sha256Hex } from "./crypto.js";
import { canonicalize, isObject } from "./json.js";

export const LEAF_KIND = "pokna.game/1";
const encoder = new TextEncoder();
const SIGNATURE_DASH = "\u2014 ";

const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};
const equal = (a, b) => a.length === b.length && a.every((byte, i) => byte === b[i]);

// Standard padded base64 (RFC 4648 section 4), one spelling per value, as the Python side reads it.
export function b64Decode(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw new Error(`${JSON.stringify(String(text).slice(0, 20))} is not base64`);
  const bytes = Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
  if (btoa(String.fromCharCode(...bytes)) !== text) throw new Error(`${JSON.stringify(text.slice(0, 20))} is not the canonical base64 spelling`);
  return bytes;
}

export const leafHash = (entry) => sha256Bytes(concat(Uint8Array.of(0), entry));
export const nodeHash = (left, right) => sha256Bytes(concat(Uint8Array.of(1), left, right));

// RFC 9162 section 2.1.3.2, step by step: the problem, or null when the path leads from the leaf hash to root.
export async function inclusionProblem(leaf, index, treeSize, path, root) {
  if (![leaf, root, ...path].every((value) => value.length === 32)) return "a hash of the proof is not 32 bytes";
  if (!(Number.isInteger(index) && Number.isInteger(treeSize) && index >= 0 && index < treeSize)) return `leaf ${index} is not in a tree of ${treeSize} leaves`;
  let fn = BigInt(index);
  let sn = BigInt(treeSize - 1);
  let r = leaf;
  for (const p of path) {
    if (sn === 0n) return `the path is longer than a tree of ${treeSize} leaves is deep`;
    if ((fn & 1n) === 1n || fn === sn) {
      r = await nodeHash(p, r);
      while ((fn & 1n) === 0n && fn !== 0n) {
        fn >>= 1n;
        sn >>= 1n;
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n) return `the path is shorter than a tree of ${treeSize} leaves is deep`;
  return equal(r, root) ? null : `the path from leaf ${index} leads to another root than the tree of ${treeSize}`;
}

// C2SP tlog-checkpoint: origin, size, base64 root hash, extension lines.
export function parseCheckpoint(text) {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : [];
  if (lines.length < 3) throw new Error("a checkpoint has an origin, a size and a root hash line");
  const [origin, size, root, ...extensions] = lines;
  if (!/^(0|[1-9][0-9]{0,19})$/.test(size) || BigInt(size) >= 2n ** 64n) throw new Error(`the checkpoint's size ${JSON.stringify(size.slice(0, 24))} is not a decimal tree size`);
  // A Number above 2**53 - 1 is rounded, and a path would be checked against a tree of another size than the signed one.
  if (BigInt(size) > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`the checkpoint's size ${size} is more games than this verifier counts exactly (2**53 - 1)`);
  const rootHash = b64Decode(root);
  if (rootHash.length !== 32) throw new Error(`the checkpoint's root hash is ${rootHash.length} bytes, not 32`);
  return { origin, size: Number(size), rootHash, extensions };
}

// C2SP signed-note key hash: the first four bytes of SHA-256(name || "\n" || 0x01 || public key).
export async function noteKeyHash(name, rawPublicKey) {
  return (await sha256Bytes(concat(encoder.encode(name + "\n"), Uint8Array.of(1), rawPublicKey))).slice(0, 4);
}

// The note's text once a key of `rawKeys` signed it under `name`. Throws Error for a malformed note or a bad
// signature; a TypeError/NotSupportedError from importKey means this WebCrypto has no Ed25519 (the caller says so).
export async function openNote(note, name, rawKeys) {
  const split = note.lastIndexOf("\n\n");
  if (split < 0 || !note.endsWith("\n")) throw new Error("a signed note is text, a blank line and signature lines");
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  let verified = false;
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_DASH)) throw new Error(`${JSON.stringify(line.slice(0, 40))} is not a signature line`);
    const [signer, blob, ...rest] = line.slice(SIGNATURE_DASH.length).split(" ");
    if (rest.length || !blob) throw new Error(`${JSON.stringify(line.slice(0, 40))} does not name its key`);
    const raw = b64Decode(blob);
    if (signer !== name || raw.length !== 68) continue; // a witness's cosignature, or another key's
    for (const key of rawKeys) {
      if (!equal(await noteKeyHash(name, key), raw.slice(0, 4))) continue;
      const imported = await crypto.subtle.importKey("raw", key, { name: "Ed25519" }, false, ["verify"]);
      if (!(await crypto.subtle.verify({ name: "Ed25519" }, imported, raw.slice(4), encoder.encode(text)))) {
        throw new Error(`invalid signature for key ${name}`);
      }
      verified = true;
    }
  }
  if (!verified) throw new Error("the checkpoint has no signature by a key of the key ring under its origin");
  return text;
}

// The leaf a finished game's proof makes (pokna_verify.tlog.game_leaf): RFC 8785 JSON holding the SHA-256 of
// the whole signed proof, so the logged entry must be this very proof's.
export async function gameLeafEntry(proof, status, potAccountId) {
  return canonicalize({ leaf: LEAF_KIND, game_id: proof.game_id, status, pot_account_id: potAccountId, proof_sha256: await sha256Hex(canonicalize(proof)) });
}

// The link's `public_log` member judged: {name: "public_log", status, message, gameNumber?, origin?}.
// Pending is "not run" and fails nothing; any other status than logged, a leaf that is not this proof's, a path
// that does not lead to the signed root, or a checkpoint no key of the ring signed, fails. Without WebCrypto Ed25519 the path is still
// checked against the checkpoint's root, and the result says the signature was not.
export async function checkPublicLog(proof, place, keyRing) {
  const name = "public_log";
  if (!isObject(place)) return notRun(name, "the link carries no place in a public log");
  if (place.status === "pending") return notRun(name, "not logged yet: a game is logged about a second after it ends; check again later");
  // The service writes only "pending" and "logged"; the place is not signed, so any other is a changed link (as pokna-verify proof says).
  if (place.status !== "logged") return check(name, [`the link's public_log is malformed: its status is ${JSON.stringify(place.status ?? null).slice(0, 40)}, neither pending nor logged`]);
  let checkpoint;
  let path;
  try {
    checkpoint = parseCheckpoint(typeof place.checkpoint === "string" ? place.checkpoint.slice(0, place.checkpoint.lastIndexOf("\n\n") + 1) : "");
    path = (Array.isArray(place.inclusion_path) ? place.inclusion_path : [null]).map(b64Decode);
  } catch (error) {
    return check(name, [`the link's public_log is malformed: ${error.message}`]);
  }
  const where = { origin: checkpoint.origin, gameNumber: place.leaf_index + 1, treeSize: checkpoint.size };
  let claimed;
  try {
    claimed = JSON.parse(place.entry);
  } catch {
    claimed = null;
  }
  if (!isObject(claimed) || claimed.leaf !== LEAF_KIND) return { ...check(name, [`the log's entry is not a ${LEAF_KIND} leaf`]), ...where };
  const entry = await gameLeafEntry(proof, claimed.status, claimed.pot_account_id);
  if (entry !== place.entry) return { ...check(name, [`${checkpoint.origin} logged another proof for game ${proof.game_id} than this one`]), ...where };
  const problem = await inclusionProblem(await leafHash(encoder.encode(entry)), place.leaf_index, checkpoint.size, path, checkpoint.rootHash);
  if (problem) return { ...check(name, [`the log's inclusion proof fails: ${problem}`]), ...where };
  if (!keyRing) return { ...notRun(name, "the path leads to the checkpoint's root, but there is no key ring to check its signature with"), ...where };
  const keys = [];
  for (const key of keyRing && Array.isArray(keyRing.keys) ? keyRing.keys : []) {
    try {
      if (key.algorithm === "Ed25519") keys.push(b64urlDecode(key.public_key));
    } catch {
      // a key that is not base64url signs nothing
    }
  }
  const proven = `game #${where.gameNumber} of ${checkpoint.origin}'s public log, proven in its signed checkpoint of ${checkpoint.size} games`;
  try {
    await openNote(place.checkpoint, checkpoint.origin, keys);
  } catch (error) {
    if (error.name === "NotSupportedError") {
      return { ...notRun(name, `the path leads to the checkpoint's root, but this browser has no WebCrypto Ed25519 to check its signature (${error.name})`), ...where };
    }
    return { ...check(name, [`the checkpoint the link carries is not signed: ${error.message}`]), ...where };
  }
  return { ...check(name, [], proven), ...where };
}
