// Pokna proof verifier for the browser: a transcription of pokna.fairness.verification using WebCrypto.
// No dependencies, no build step, no network except same-origin fetches of the proof and the key ring.
"use strict";

const PROTOCOL = "pokna-hmac-sha256-v1";
const PROOF_DOCUMENT = "proof";
const RECEIPT_DOCUMENT = "commitment_receipt";
const HEX64 = /^[0-9a-f]{64}$/;
const CLIENT_SEED = /^[A-Za-z0-9._~-]{1,64}$/;
const PURPOSES = ["favor", "seek", "challenge_favor", "challenge"];
const SOURCES = ["player", "server"];
const encoder = new TextEncoder();

// ---- primitives -------------------------------------------------------------------------------------------

function toHex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256Hex(text) {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

async function hmacSha256(keyText, message) {
  const key = await crypto.subtle.importKey("raw", encoder.encode(keyText), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
}

// One roll of pokna-hmac-sha256-v1 (Stake's byte generator, cursor 0). u32 * 6 < 2**35 is exact in a double.
async function computeRoll(serverSeed, gameClientSeed, nonce) {
  const digest = await hmacSha256(serverSeed, `${gameClientSeed}:${nonce}:0`);
  const u32 = ((digest[0] << 24) >>> 0) + (digest[1] << 16) + (digest[2] << 8) + digest[3];
  const face = Math.floor((u32 * 6) / 2 ** 32) + 1;
  return { digest: toHex(digest), f: u32 / 2 ** 32, face, color: face <= 3 ? "red" : "blue" };
}

// RFC 8785: JSON.stringify already writes ECMAScript numbers and JCS string escapes; keys sort by UTF-16 units.
function canonicalize(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return "[" + value.map(canonicalize).join(",") + "]";
  return (
    "{" +
    Object.keys(value)
      .sort()
      .map((key) => JSON.stringify(key) + ":" + canonicalize(value[key]))
      .join(",") +
    "}"
  );
}

function b64urlDecode(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
    throw new Error("not unpadded base64url");
  }
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(padded), (ch) => ch.charCodeAt(0));
}

function unsigned(document) {
  const copy = { ...document };
  delete copy.signature;
  return copy;
}

// ---- proof shape (mirrors pokna.fairness.json_reader: a malformed proof is unusable, not invalid) ----------

class MalformedProof extends Error {}

function need(object, name, kind, path) {
  if (!(name in object)) throw new MalformedProof(`${path}.${name}: missing`);
  const value = object[name];
  const ok =
    kind === "string"
      ? typeof value === "string"
      : kind === "integer"
        ? Number.isInteger(value)
        : kind === "list"
          ? Array.isArray(value)
          : kind === "party"
            ? Number.isInteger(value) || value === "pot"
            : value !== null && typeof value === "object" && !Array.isArray(value);
  if (!ok) throw new MalformedProof(`${path}.${name}: expected ${kind === "party" ? 'a seat number or "pot"' : kind}`);
  return value;
}

function objectAt(value, path) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new MalformedProof(`${path}: expected an object`);
  return value;
}

function checkShape(proof) {
  objectAt(proof, "$");
  for (const name of ["protocol", "document", "game_id", "server_seed", "server_seed_hash", "client_seed", "key_id", "signature"]) {
    need(proof, name, "string", "$");
  }
  need(proof, "outcome", "object", "$");
  const game = need(proof, "game", "object", "$");
  need(game, "stake", "integer", "$.game");
  need(game, "challenge_raise", "integer", "$.game");
  need(game, "seats", "list", "$.game").forEach((seat, i) => {
    const path = `$.game.seats[${i}]`;
    need(objectAt(seat, path), "seat", "integer", path);
    need(seat, "account_id", "string", path);
  });
  need(proof, "client_seeds", "list", "$").forEach((entry, i) => {
    const path = `$.client_seeds[${i}]`;
    need(objectAt(entry, path), "seat", "integer", path);
    for (const name of ["account_id", "client_seed", "source"]) need(entry, name, "string", path);
  });
  need(proof, "rolls", "list", "$").forEach((entry, i) => {
    const path = `$.rolls[${i}]`;
    objectAt(entry, path);
    for (const name of ["nonce", "seat", "face"]) need(entry, name, "integer", path);
    for (const name of ["account_id", "purpose", "color"]) need(entry, name, "string", path);
  });
  need(proof, "actions", "list", "$").forEach((entry, i) => objectAt(entry, `$.actions[${i}]`));
  need(proof, "transfers", "list", "$").forEach((entry, i) => {
    const path = `$.transfers[${i}]`;
    need(objectAt(entry, path), "kind", "string", path);
    need(entry, "payer", "party", path);
    need(entry, "payee", "party", path);
    need(entry, "amount", "integer", path);
  });
}

// ---- checks (same names and messages as the Python verifier) ----------------------------------------------

const result = (name, problems, success) =>
  problems.length ? { name, status: "fail", message: problems.join("; ") } : { name, status: "pass", message: success };

async function checkCommitment(proof) {
  if (!HEX64.test(proof.server_seed)) return result("commitment", ["server_seed is not 64 lowercase hexadecimal characters"]);
  const computed = await sha256Hex(proof.server_seed);
  if (computed !== proof.server_seed_hash) {
    return result("commitment", [`sha256(server_seed) is ${computed}, server_seed_hash is ${proof.server_seed_hash}`]);
  }
  return result("commitment", [], `sha256(server_seed) = server_seed_hash = ${computed}`);
}

function checkClientSeedFormat(proof) {
  const problems = [];
  if (!proof.client_seeds.length) problems.push("client_seeds is empty");
  for (const entry of proof.client_seeds) {
    if (!CLIENT_SEED.test(entry.client_seed)) {
      problems.push(`seat ${entry.seat}: a client seed is 1 to 64 characters of A-Z a-z 0-9 . _ ~ -`);
    }
    if (!SOURCES.includes(entry.source)) problems.push(`seat ${entry.seat}: source is '${entry.source}', not player or server`);
  }
  if (!HEX64.test(proof.client_seed)) problems.push("client_seed is not 64 lowercase hexadecimal characters");
  return result("client_seed_format", problems, `${proof.client_seeds.length} client seeds well formed`);
}

async function checkClientSeed(proof) {
  const ordered = [...proof.client_seeds].sort((a, b) => a.seat - b.seat);
  const computed = await sha256Hex(ordered.map((entry) => entry.client_seed).join("\n"));
  if (computed !== proof.client_seed) {
    return result("client_seed", [`sha256 of the seats' client seeds is ${computed}, client_seed is ${proof.client_seed}`]);
  }
  return result("client_seed", [], `client_seed = sha256 of the seats' client seeds = ${computed}`);
}

function checkSeats(proof) {
  const problems = [];
  const seatNumbers = proof.game.seats.map((seat) => seat.seat);
  if (seatNumbers.some((seat, i) => seat !== i)) problems.push(`game.seats are numbered [${seatNumbers}], not 0..n-1 in order`);
  const accounts = new Map(proof.game.seats.map((seat) => [seat.seat, seat.account_id]));
  const seedSeats = proof.client_seeds.map((entry) => entry.seat);
  if (seedSeats.join(",") !== seatNumbers.join(",")) {
    problems.push(`client_seeds are for seats [${seedSeats}], game.seats are [${seatNumbers}]`);
  }
  for (const entry of proof.client_seeds) {
    if (accounts.has(entry.seat) && accounts.get(entry.seat) !== entry.account_id) {
      problems.push(`client seed of seat ${entry.seat} names account ${entry.account_id}, the seat is ${accounts.get(entry.seat)}`);
    }
  }
  for (const entry of proof.rolls) {
    if (!accounts.has(entry.seat)) problems.push(`roll nonce ${entry.nonce}: seat ${entry.seat} is not in the game`);
    else if (accounts.get(entry.seat) !== entry.account_id) {
      problems.push(`roll nonce ${entry.nonce}: names account ${entry.account_id}, seat ${entry.seat} is ${accounts.get(entry.seat)}`);
    }
  }
  proof.transfers.forEach((transfer, i) => {
    for (const role of ["payer", "payee"]) {
      if (transfer[role] !== "pot" && !accounts.has(transfer[role])) {
        problems.push(`transfer ${i}: ${role} seat ${transfer[role]} is not in the game`);
      }
    }
    if (transfer.amount <= 0) problems.push(`transfer ${i}: amount ${transfer.amount} is not positive`);
  });
  return result("seats", problems, `${seatNumbers.length} seats consistent across the proof`);
}

function checkNonces(proof) {
  const problems = [];
  const seen = new Set();
  proof.rolls.forEach((entry, i) => {
    if (seen.has(entry.nonce)) problems.push(`nonce ${entry.nonce} is used twice`);
    else if (entry.nonce !== i) problems.push(`roll ${i} has nonce ${entry.nonce}, expected ${i}`);
    seen.add(entry.nonce);
  });
  return result("nonces", problems, proof.rolls.length ? `nonces 0..${proof.rolls.length - 1} each used once, in order` : "no rolls");
}

async function checkRolls(proof, rows) {
  if (!HEX64.test(proof.server_seed)) {
    return result("rolls", ["cannot recompute: server_seed is not 64 lowercase hexadecimal characters"]);
  }
  const problems = [];
  for (const [i, entry] of proof.rolls.entries()) {
    const label = `roll nonce ${entry.nonce}`;
    if (entry.nonce < 0) {
      problems.push(`${label}: a nonce is never negative`);
      rows.push({ entry, computed: null, match: false });
      continue;
    }
    const computed = await computeRoll(proof.server_seed, proof.client_seed, entry.nonce);
    const before = problems.length;
    if (entry.face !== computed.face) problems.push(`${label}: face ${entry.face} recorded, ${computed.face} computed`);
    if (entry.color !== computed.color) problems.push(`${label}: colour ${entry.color} recorded, ${computed.color} computed`);
    if (!PURPOSES.includes(entry.purpose)) problems.push(`${label}: purpose '${entry.purpose}' is not one of ${PURPOSES.join(", ")}`);
    if (i === 0 && (entry.purpose !== "favor" || entry.seat !== 0)) {
      problems.push(`${label}: the first roll is the Vigo's (seat 0) favor roll`);
    }
    rows.push({ entry, computed, match: problems.length === before });
  }
  return result("rolls", problems, `${proof.rolls.length} rolls recomputed, every face and colour matches`);
}

async function keyIdOf(rawPublicKey) {
  return "ed25519:" + toHex(await crypto.subtle.digest("SHA-256", rawPublicKey)).slice(0, 16);
}

async function checkSignature(name, document, keyRing) {
  if (!keyRing) return { name, status: "not run", message: "no key ring given" };
  const entry = (keyRing.keys || []).find((key) => key.key_id === document.key_id);
  if (!entry) return result(name, [`key_id ${document.key_id} is not in the key ring`]);
  let raw;
  try {
    raw = b64urlDecode(entry.public_key);
  } catch (error) {
    return result(name, [`key ${entry.key_id}: public key is ${error.message}`]);
  }
  if (entry.algorithm !== "Ed25519" || raw.length !== 32 || (await keyIdOf(raw)) !== entry.key_id) {
    return result(name, [`key ring entry ${entry.key_id} is not an Ed25519 key with that id`]);
  }
  let signature;
  try {
    signature = b64urlDecode(document.signature);
  } catch (error) {
    return result(name, [`signature is ${error.message}`]);
  }
  if (signature.length !== 64) return result(name, [`an Ed25519 signature is 64 bytes, this one is ${signature.length}`]);
  let key;
  try {
    key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  } catch (error) {
    return { name, status: "not run", message: `this browser has no WebCrypto Ed25519 (${error.name}); use pokna verify` };
  }
  const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, signature, encoder.encode(canonicalize(unsigned(document))));
  const retired = entry.status === "retired" ? " (a retired key)" : "";
  return result(name, ok ? [] : [`signature does not verify with key ${entry.key_id}`], `Ed25519 signature by ${entry.key_id}${retired} verifies`);
}

async function checkReceipt(proof, receipt, keyRing) {
  if (!receipt) return { name: "receipt", status: "not run", message: "no commitment receipt given" };
  const problems = [];
  const expected = { protocol: PROTOCOL, document: RECEIPT_DOCUMENT, game_id: proof.game_id, server_seed_hash: proof.server_seed_hash };
  for (const [field, value] of Object.entries(expected)) {
    if (receipt[field] !== value) problems.push(`receipt ${field} is ${JSON.stringify(receipt[field])}, expected ${JSON.stringify(value)}`);
  }
  for (const field of ["stake", "challenge_raise"]) {
    const promised = receipt.game ? receipt.game[field] : undefined;
    if (promised !== proof.game[field]) problems.push(`receipt game.${field} is ${promised}, the proof's is ${proof.game[field]}`);
  }
  const signature = await checkSignature("receipt", receipt, keyRing);
  if (signature.status === "fail") problems.push(`receipt ${signature.message}`);
  const suffix = signature.status === "pass" ? "" : " (receipt signature not checked)";
  return result("receipt", problems, `the proof reveals the seed committed to at game creation${suffix}`);
}

async function verifyProof(proof, keyRing, receipt) {
  checkShape(proof);
  const rows = [];
  const protocolProblems = [];
  if (proof.protocol !== PROTOCOL) protocolProblems.push(`protocol is '${proof.protocol}', this verifier knows only '${PROTOCOL}'`);
  if (proof.document !== PROOF_DOCUMENT) protocolProblems.push(`document is '${proof.document}', not '${PROOF_DOCUMENT}'`);
  const checks = [
    result("protocol", protocolProblems, PROTOCOL),
    await checkCommitment(proof),
    checkClientSeedFormat(proof),
    await checkClientSeed(proof),
    checkSeats(proof),
    checkNonces(proof),
    await checkRolls(proof, rows),
    await checkSignature("signature", proof, keyRing),
    await checkReceipt(proof, receipt, keyRing),
    { name: "replay", status: "not run", message: "the rules replay runs in pokna verify, not in the browser" },
  ];
  return { checks, rows };
}

// ---- page -------------------------------------------------------------------------------------------------

function cell(row, text, mono) {
  const td = row.insertCell();
  td.textContent = text; // textContent only: a proof is untrusted input
  if (mono) td.className = "mono";
}

function setVerdict(state, text, detail) {
  const verdict = document.getElementById("verdict");
  verdict.dataset.state = state;
  verdict.textContent = text;
  document.getElementById("verdict-detail").textContent = detail;
}

function render(report) {
  const checks = document.querySelector("#checks tbody");
  checks.replaceChildren();
  for (const check of report.checks) {
    const row = checks.insertRow();
    row.dataset.check = check.name;
    row.dataset.status = check.status;
    cell(row, check.name);
    cell(row, check.status.toUpperCase());
    cell(row, check.message, true);
  }
  const rolls = document.querySelector("#rolls tbody");
  rolls.replaceChildren();
  for (const { entry, computed, match } of report.rows) {
    const row = rolls.insertRow();
    row.dataset.nonce = String(entry.nonce);
    row.dataset.match = String(match);
    cell(row, String(entry.nonce));
    cell(row, String(entry.seat));
    cell(row, entry.purpose);
    cell(row, computed ? String(computed.f) : "", true);
    cell(row, String(entry.face));
    cell(row, computed ? String(computed.face) : "");
    cell(row, entry.color);
    cell(row, computed ? computed.color : "");
    cell(row, match ? "yes" : "NO");
  }
  const failed = report.checks.filter((check) => check.status === "fail").map((check) => check.name);
  const notRun = report.checks.filter((check) => check.status === "not run").map((check) => check.name);
  if (failed.length) setVerdict("invalid", "INVALID", `failed checks: ${failed.join(", ")}`);
  else setVerdict("valid", "VALID", notRun.length ? `not run: ${notRun.join(", ")}` : "every check passed");
}

function parseOptional(id, what) {
  const text = document.getElementById(id).value.trim();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new MalformedProof(`the ${what} is not JSON: ${error.message}`);
  }
}

async function runVerification() {
  setVerdict("pending", "PENDING", "");
  try {
    const proof = parseOptional("proof-json", "proof");
    if (proof === null) throw new MalformedProof("paste a proof first");
    render(await verifyProof(proof, parseOptional("keys-json", "key ring"), parseOptional("receipt-json", "receipt")));
  } catch (error) {
    if (!(error instanceof MalformedProof)) console.error(error);
    document.querySelector("#checks tbody").replaceChildren();
    document.querySelector("#rolls tbody").replaceChildren();
    setVerdict("unusable", "UNUSABLE", error.message);
  }
}

async function fetchText(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return await response.text();
}

async function runCalculator() {
  const serverSeed = document.getElementById("calc-server-seed").value.trim();
  const clientSeed = document.getElementById("calc-client-seed").value.trim();
  const status = document.getElementById("calc-status");
  const body = document.querySelector("#calc-results tbody");
  body.replaceChildren();
  if (!HEX64.test(serverSeed)) {
    status.textContent = "a server seed is 64 lowercase hexadecimal characters";
    status.dataset.state = "error";
    return;
  }
  const nonces = document.getElementById("calc-nonces").value.split(",").map((text) => text.trim()).filter(Boolean);
  for (const text of nonces) {
    if (!/^\d+$/.test(text)) {
      status.textContent = `nonce '${text}' is not a non-negative integer`;
      status.dataset.state = "error";
      return;
    }
    const computed = await computeRoll(serverSeed, clientSeed, text.replace(/^0+(?=\d)/, ""));
    const row = body.insertRow();
    row.dataset.nonce = text;
    row.dataset.f = String(computed.f);
    row.dataset.face = String(computed.face);
    row.dataset.color = computed.color;
    cell(row, text);
    cell(row, computed.digest, true);
    cell(row, String(computed.f), true);
    cell(row, String(computed.face));
    cell(row, computed.color);
  }
  status.textContent = `${nonces.length} rolls`;
  status.dataset.state = "done";
}

async function start() {
  document.getElementById("verify-button").addEventListener("click", runVerification);
  document.getElementById("calc-button").addEventListener("click", runCalculator);
  const params = new URLSearchParams(location.search);
  if (params.has("server_seed")) {
    document.getElementById("calc-server-seed").value = params.get("server_seed");
    document.getElementById("calc-client-seed").value = params.get("client_seed") || "";
    document.getElementById("calc-nonces").value = params.get("nonces") || "0";
    await runCalculator();
  }
  const game = params.get("game");
  if (game) {
    try {
      document.getElementById("proof-json").value = await fetchText(`/v1/games/${encodeURIComponent(game)}/proof`);
    } catch (error) {
      setVerdict("unusable", "UNUSABLE", `cannot load the proof: ${error.message}`);
      return;
    }
    try {
      document.getElementById("keys-json").value = await fetchText("/v1/fairness/keys");
    } catch (error) {
      console.warn("no key ring", error); // the signature check will say "not run"
    }
    await runVerification();
  }
  document.body.dataset.ready = "true";
}

start();
