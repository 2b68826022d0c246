// Pokna proof verifier, in the browser: it re-checks a finished game of Vigo's Favor and tells it as a story.
//
// Everything is recomputed here with WebCrypto: the commitment, the game client seed, every roll, both
// signatures, and the rules replay, a second implementation of docs/rules.md in JavaScript (not a copy of the
// Python engine), which re-derives every transfer and the outcome from the recorded decisions and rolls.
// No build step. One dependency, for beacon-mode proofs only: the BLS pairing of @noble/curves, vendored as
// noble-bls12-381.js beside this file and imported only when a proof names drand rounds. The only requests
// are same-origin fetches of a proof link, the key ring and that file, and, only when the page's address
// names one (?beacon_chain=URL), a drand chain's /info to trust besides quicknet.
//
// Sections: primitives · documents · checks · the rules · verifying · the story · the page.
// window.PoknaVerifier exposes verifyDocument() and replayRules() for scripts and tests.
"use strict";

(() => {
  const PROTOCOL = "pokna-hmac-sha256-v1";
  // The beacon fairness mode (docs/fairness.md, section 1b): rolls also depend on a drand round.
  const BEACON_PROTOCOL = "pokna-hmac-sha256-drand-v1";
  const BEACON_SCHEME = "bls-unchained-g1-rfc9380";
  const BEACON_DST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";
  // drand's quicknet, as pokna_verify.fairness.beacon.QUICKNET pins it: the only public beacon this page trusts,
  // unless the page's address names another chain (?beacon_chain=, as `pokna verify --beacon-chain`).
  const QUICKNET = {
    scheme: BEACON_SCHEME,
    chain_hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971",
    public_key:
      "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510" +
      "d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a",
    genesis_time: 1692803367,
    period: 3,
  };
  const CHAIN_INFO_TIMEOUT_MS = 10000;
  const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
  const HEX = /^[0-9a-f]*$/;
  // Resolved now: document.currentScript is only set while this script first runs.
  const NOBLE_URL = new URL("noble-bls12-381.js", (document.currentScript && document.currentScript.src) || location.href).href;
  const PROOF_DOCUMENT = "proof";
  const RECEIPT_DOCUMENT = "commitment_receipt";
  const LINK_OBJECT = "fairness_link";
  const KEYS_PATH = "/v1/fairness/keys";
  const LINK_PATH = "/v1/fairness/proofs/";
  const HEX64 = /^[0-9a-f]{64}$/;
  const CLIENT_SEED = /^[A-Za-z0-9._~-]{1,64}$/;
  const LINK_TOKEN = /^[A-Za-z0-9_-]{32,}$/;
  const PURPOSES = ["favor", "seek", "challenge_favor", "challenge"];
  const SOURCES = ["player", "server"];
  const encoder = new TextEncoder();

  // ---- primitives ---------------------------------------------------------------------------------------

  const toHex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

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
    return { digest: toHex(digest), f: u32 / 2 ** 32, face, color: colorOf(face) };
  }

  const colorOf = (face) => (face <= 3 ? "red" : "blue");

  // A beacon-mode roll: the same generator with the round's randomness in the client seed,
  // HMAC-SHA256(server_seed, `${client_seed}:${randomness}:${nonce}:0`).
  const computeBeaconRoll = (serverSeed, gameClientSeed, nonce, randomness) => computeRoll(serverSeed, `${gameClientSeed}:${randomness}`, nonce);

  const hexBytes = (hex) => Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));

  let noble = null;
  const loadNoble = () => (noble ??= import(NOBLE_URL));

  // RFC 8785: JSON.stringify already writes ECMAScript numbers and JCS string escapes; keys sort by UTF-16 units.
  function canonicalize(value) {
    if (value === null || typeof value !== "object") {
      if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite number");
      return JSON.stringify(value);
    }
    if (Array.isArray(value)) return "[" + value.map(canonicalize).join(",") + "]";
    const keys = Object.keys(value).sort();
    return "{" + keys.map((key) => JSON.stringify(key) + ":" + canonicalize(value[key])).join(",") + "}";
  }

  const b64urlEncode = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

  // Strict: one spelling per value, so a re-encoded signature is refused as the Python verifier refuses it.
  function b64urlDecode(text) {
    if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
      throw new Error("not unpadded base64url");
    }
    const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (ch) => ch.charCodeAt(0));
    if (b64urlEncode(bytes) !== text) throw new Error("not canonical unpadded base64url");
    return bytes;
  }

  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  const isInteger = (value) => typeof value === "number" && Number.isInteger(value);

  // ---- documents ----------------------------------------------------------------------------------------

  // The input cannot be checked at all (not JSON, not a proof, no such link): the verdict is UNUSABLE.
  class Unusable extends Error {
    constructor(message, headline = "UNUSABLE") {
      super(message);
      this.headline = headline;
    }
  }

  // A proof with a missing or mistyped field: the operator's document is broken, so the verdict is INVALID.
  class MalformedProof extends Error {}

  function need(object, name, kind, path) {
    if (!(name in object)) throw new MalformedProof(`${path}.${name}: missing`);
    const value = object[name];
    const ok =
      kind === "string"
        ? typeof value === "string"
        : kind === "integer"
          ? isInteger(value)
          : kind === "list"
            ? Array.isArray(value)
            : kind === "party"
              ? isInteger(value) || value === "pot" || value === "revenue"
              : isObject(value);
    if (!ok) throw new MalformedProof(`${path}.${name}: expected ${kind === "party" ? 'a seat number, "pot" or "revenue"' : kind === "integer" ? "an integer" : `a ${kind}`}`);
    return value;
  }

  function objectAt(value, path) {
    if (!isObject(value)) throw new MalformedProof(`${path}: expected an object`);
    return value;
  }

  // Mirrors pokna_verify.fairness.json_reader: the first missing or mistyped field, by its JSON path.
  function checkShape(proof) {
    objectAt(proof, "$");
    for (const name of ["protocol", "document", "game_id", "server_seed", "server_seed_hash"]) need(proof, name, "string", "$");
    need(proof, "client_seeds", "list", "$").forEach((entry, i) => {
      const path = `$.client_seeds[${i}]`;
      need(objectAt(entry, path), "seat", "integer", path);
      for (const name of ["account_id", "client_seed", "source"]) need(entry, name, "string", path);
    });
    need(proof, "client_seed", "string", "$");
    const game = need(proof, "game", "object", "$");
    need(game, "stake", "integer", "$.game");
    need(game, "challenge_raise", "integer", "$.game");
    // Rake terms came with a later version of the service: absent (or null) means no rake.
    for (const name of ["rake_bps", "rake_cap"]) if (game[name] !== undefined && game[name] !== null) need(game, name, "integer", "$.game");
    need(game, "seats", "list", "$.game").forEach((seat, i) => {
      const path = `$.game.seats[${i}]`;
      need(objectAt(seat, path), "seat", "integer", path);
      need(seat, "account_id", "string", path);
      // Display labels came with a later version of the service: absent (or null) means none.
      if (seat.label !== undefined && seat.label !== null) need(seat, "label", "string", path);
    });
    need(proof, "rolls", "list", "$").forEach((entry, i) => {
      const path = `$.rolls[${i}]`;
      objectAt(entry, path);
      for (const name of ["nonce", "seat"]) need(entry, name, "integer", path);
      need(entry, "account_id", "string", path);
      need(entry, "purpose", "string", path);
      need(entry, "face", "integer", path);
      need(entry, "color", "string", path);
      if ("accepted_at" in entry) need(entry, "accepted_at", "string", path);
      if ("beacon" in entry) {
        const round = need(entry, "beacon", "object", path);
        need(round, "round", "integer", `${path}.beacon`);
        for (const name of ["randomness", "signature"]) need(round, name, "string", `${path}.beacon`);
      }
    });
    // Beacon mode (absent in the default mode).
    if ("fairness_mode" in proof) need(proof, "fairness_mode", "string", "$");
    if ("beacon_chain" in proof) {
      const chain = need(proof, "beacon_chain", "object", "$");
      for (const name of ["scheme", "chain_hash", "public_key"]) need(chain, name, "string", "$.beacon_chain");
      for (const name of ["genesis_time", "period"]) need(chain, name, "integer", "$.beacon_chain");
    }
    need(proof, "actions", "list", "$").forEach((entry, i) => objectAt(entry, `$.actions[${i}]`));
    need(proof, "outcome", "object", "$");
    need(proof, "transfers", "list", "$").forEach((entry, i) => {
      const path = `$.transfers[${i}]`;
      need(objectAt(entry, path), "kind", "string", path);
      need(entry, "payer", "party", path);
      need(entry, "payee", "party", path);
      need(entry, "amount", "integer", path);
    });
    need(proof, "key_id", "string", "$");
    need(proof, "signature", "string", "$");
  }

  // What the page was given: a public link document (GET /v1/fairness/proofs/{token}) or a bare proof.
  function readDocument(value) {
    if (!isObject(value)) throw new Unusable("the document is not a JSON object");
    if (value.object === LINK_OBJECT) {
      const proof = value.proof ?? null;
      if (value.revealed === true && proof === null) throw new Unusable("the link says the game is revealed but carries no proof");
      return {
        link: value,
        proof,
        receipt: isObject(value.commitment) ? value.commitment : null,
        clientSeeds: Array.isArray(value.client_seeds) ? value.client_seeds : [],
      };
    }
    if (value.document === RECEIPT_DOCUMENT) {
      throw new Unusable("this is a commitment receipt, not a proof: give it under “Your commitment receipt”, with the proof");
    }
    if (value.document === PROOF_DOCUMENT || "protocol" in value || "server_seed" in value) {
      return { link: null, proof: value, receipt: null, clientSeeds: [] };
    }
    throw new Unusable('neither a proof nor a proof link document (expected "document": "proof" or "object": "fairness_link")');
  }

  // ---- checks (names and failure messages as pokna_verify.fairness.verification) -------------------------------

  const check = (name, problems, success) =>
    problems.length ? { name, status: "fail", message: problems.join("; ") } : { name, status: "pass", message: success };
  const notRun = (name, reason) => ({ name, status: "not run", message: reason });
  // A value as the Python verifier's messages print it (repr), so both say the same words.
  const quoted = (value) => (typeof value === "string" ? `'${value}'` : value === undefined || value === null ? "None" : JSON.stringify(value));

  async function checkCommitment(proof) {
    if (!HEX64.test(proof.server_seed)) return check("commitment", ["server_seed is not 64 lowercase hexadecimal characters"]);
    const computed = await sha256Hex(proof.server_seed);
    if (computed !== proof.server_seed_hash) {
      return check("commitment", [`sha256(server_seed) is ${computed}, server_seed_hash is ${proof.server_seed_hash}`]);
    }
    return check("commitment", [], `sha256(server_seed) = server_seed_hash = ${computed}`);
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
    return check("client_seed_format", problems, `${proof.client_seeds.length} client seeds well formed`);
  }

  async function checkClientSeed(proof) {
    const ordered = [...proof.client_seeds].sort((a, b) => a.seat - b.seat);
    const computed = await sha256Hex(ordered.map((entry) => entry.client_seed).join("\n"));
    if (computed !== proof.client_seed) {
      return check("client_seed", [`sha256 of the seats' client seeds is ${computed}, client_seed is ${proof.client_seed}`]);
    }
    return check("client_seed", [], `client_seed = sha256 of the seats' client seeds = ${computed}`);
  }

  // Also marks the rows it blames (marks.rolls by nonce, marks.transfers by index) for the story.
  function checkSeats(proof, marks) {
    const problems = [];
    const seatNumbers = proof.game.seats.map((seat) => seat.seat);
    if (seatNumbers.some((seat, i) => seat !== i)) {
      problems.push(`game.seats are numbered [${seatNumbers.join(", ")}], not 0..${seatNumbers.length - 1} in order`);
    }
    const accounts = new Map(proof.game.seats.map((seat) => [seat.seat, seat.account_id]));
    const seedSeats = proof.client_seeds.map((entry) => entry.seat);
    if (seedSeats.join(",") !== seatNumbers.join(",")) {
      problems.push(`client_seeds are for seats [${seedSeats.join(", ")}], game.seats are [${seatNumbers.join(", ")}]`);
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
      } else continue;
      marks.rolls.add(entry.nonce);
    }
    proof.transfers.forEach((transfer, i) => {
      const before = problems.length;
      for (const role of ["payer", "payee"]) {
        if (isInteger(transfer[role]) && !accounts.has(transfer[role])) problems.push(`transfer ${i}: ${role} seat ${transfer[role]} is not in the game`);
      }
      if (transfer.amount <= 0) problems.push(`transfer ${i}: amount ${transfer.amount} is not positive`);
      if (problems.length > before) marks.transfers.add(i);
    });
    return check("seats", problems, `${seatNumbers.length} seats consistent across the proof`);
  }

  function checkNonces(proof, marks) {
    const problems = [];
    const seen = new Set();
    proof.rolls.forEach((entry, i) => {
      if (seen.has(entry.nonce)) problems.push(`nonce ${entry.nonce} is used twice`);
      else if (entry.nonce !== i) problems.push(`roll ${i} has nonce ${entry.nonce}, expected ${i}`);
      else {
        seen.add(entry.nonce);
        return;
      }
      seen.add(entry.nonce);
      marks.rollIndexes.add(i);
    });
    return check("nonces", problems, proof.rolls.length ? `nonces 0..${proof.rolls.length - 1} each used once, in order` : "no rolls");
  }

  // Recomputes every roll; `rows` gets one entry per recorded roll, in the proof's order.
  async function checkRolls(proof, rows) {
    if (!HEX64.test(proof.server_seed)) {
      for (const entry of proof.rolls) rows.push({ entry, computed: null, match: false });
      return check("rolls", ["cannot recompute: server_seed is not 64 lowercase hexadecimal characters"]);
    }
    const problems = [];
    for (const [i, entry] of proof.rolls.entries()) {
      const label = `roll nonce ${entry.nonce}`;
      if (entry.nonce < 0) {
        problems.push(`${label}: a nonce is never negative`);
        rows.push({ entry, computed: null, match: false });
        continue;
      }
      if (isBeaconProof(proof) && !isObject(entry.beacon)) {
        problems.push(`${label}: cannot recompute: no beacon round recorded`);
        rows.push({ entry, computed: null, match: false });
        continue;
      }
      const computed = isBeaconProof(proof)
        ? await computeBeaconRoll(proof.server_seed, proof.client_seed, entry.nonce, entry.beacon.randomness)
        : await computeRoll(proof.server_seed, proof.client_seed, entry.nonce);
      const before = problems.length;
      if (entry.face !== computed.face) problems.push(`${label}: face ${entry.face} recorded, ${computed.face} computed`);
      if (entry.color !== computed.color) problems.push(`${label}: colour ${entry.color} recorded, ${computed.color} computed`);
      if (!PURPOSES.includes(entry.purpose)) problems.push(`${label}: purpose '${entry.purpose}' is not one of ${PURPOSES.join(", ")}`);
      if (i === 0 && (entry.purpose !== "favor" || entry.seat !== 0)) problems.push(`${label}: the first roll is the Vigo's (seat 0) favor roll`);
      rows.push({ entry, computed, match: problems.length === before });
    }
    return check("rolls", problems, `${proof.rolls.length} rolls recomputed, every face and colour matches`);
  }

  async function keyIdOf(rawPublicKey) {
    return "ed25519:" + toHex(await crypto.subtle.digest("SHA-256", rawPublicKey)).slice(0, 16);
  }

  // keys: {ring, reason}; ring null means no key ring could be had, and `reason` says why.
  async function checkSignature(name, document, keys) {
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
      key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      return notRun(name, `this browser has no WebCrypto Ed25519 (${error.name}); use pokna verify`);
    }
    const unsigned = { ...document };
    delete unsigned.signature;
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, signature, encoder.encode(canonicalize(unsigned)));
    const retired = entry.status === "retired" ? " (a retired key)" : "";
    return check(name, ok ? [] : [`signature does not verify with key ${entry.key_id}`], `Ed25519 signature by ${entry.key_id}${retired} verifies`);
  }

  async function checkReceipt(proof, receipt, keys) {
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
  async function checkCommitmentReceipt(receipt, keys) {
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

  // ---- the rules: a second implementation of docs/rules.md --------------------------------------------------
  //
  // A table replays the proof's `actions` one by one. Each action gets the seat balances recorded with it,
  // draws its rolls from the proof by nonce (the recorded face, so a mis-recorded face is the `rolls` check's
  // business) and produces events and transfers. A refused action ends the replay: the service records only
  // actions the rules applied.

  const MIN_PLAYERS = 1;
  const MAX_PLAYERS = 11;
  const VIGO = 0;

  class Refused extends Error {
    constructor(code, message) {
      super(`${code}: ${message}`);
      this.code = code;
    }
  }

  class RollMissing extends Error {
    constructor(nonce) {
      super(`the rules draw roll nonce ${nonce}, which the proof does not have`);
      this.nonce = nonce;
    }
  }

  // A signed document's rake terms, absent ones as no rake (pokna_verify.fairness.terms.rake_terms_of).
  const rakeTermsOf = (game) => ({ rake_bps: game.rake_bps ?? 0, rake_cap: game.rake_cap ?? null });

  class Table {
    constructor(terms, rollsByNonce) {
      this.stake = terms.stake;
      this.raise = terms.challenge_raise;
      this.rakeBps = terms.rake_bps;
      this.rakeCap = terms.rake_cap;
      this.players = terms.players;
      this.rollsByNonce = rollsByNonce;
      this.phase = "open";
      this.favor = null;
      this.pot = 0;
      this.inFavor = Array.from({ length: this.players + 1 }, (_, seat) => seat !== VIGO);
      this.toRoll = [];
      this.votes = new Map();
      this.pass = 0;
      this.challenger = null;
      this.nextNonce = 0;
      this.outcome = null;
      this.transfers = [];
      this.drawn = [];
    }

    get over() {
      return this.phase === "settled" || this.phase === "cancelled";
    }

    survivors() {
      const seats = [];
      for (let seat = 1; seat <= this.players; seat++) if (this.inFavor[seat]) seats.push(seat);
      return seats;
    }

    // One action: `balances` is what each seat could spend at that step (a missing seat has 0).
    apply(record, balances, events) {
      this.balances = balances;
      this.spent = new Map();
      this.events = events;
      if (this.over) throw new Refused("game_over", `the game is already ${this.phase}`);
      const name = record.action;
      if (name === "cancel") return this.cancel();
      if (name === "timeout") return this.timeout();
      const seat = record.seat;
      if (!isInteger(seat)) throw new Refused("invalid_action", `a ${JSON.stringify(name)} action needs an integer seat`);
      if (name === "vote" && record.choice !== "split" && record.choice !== "roll_again") {
        throw new Refused("invalid_vote", `a vote is split or roll_again, not ${JSON.stringify(record.choice)}`);
      }
      if (!["start", "roll", "claim", "challenge", "vote"].includes(name)) throw new Refused("invalid_action", `unknown action ${JSON.stringify(name)}`);
      if (seat < 0 || seat > this.players) throw new Refused("unknown_seat", `seat ${seat} is not at this table`);
      if (name === "start") return this.start(seat);
      if (name === "roll") return this.roll(seat);
      if (name === "claim") return this.claim(seat);
      if (name === "challenge") return this.challenge(seat);
      return this.vote(seat, record.choice);
    }

    expectPhase(action, ...phases) {
      if (!phases.includes(this.phase)) throw new Refused("wrong_phase", `${action} is not allowed in phase ${this.phase}`);
    }

    expectSeat(seat, expected, action) {
      if (seat !== expected) throw new Refused("not_your_turn", `${action} by seat ${seat}: it is seat ${expected}'s turn`);
    }

    canPay(seat, amount) {
      return (this.balances.get(seat) ?? 0) - (this.spent.get(seat) ?? 0) >= amount;
    }

    intoPot(kind, seat, amount) {
      this.spent.set(seat, (this.spent.get(seat) ?? 0) + amount);
      this.pot += amount;
      this.move({ kind, payer: seat, payee: "pot", amount });
    }

    outOfPot(kind, seat, amount) {
      this.pot -= amount;
      this.move({ kind, payer: "pot", payee: seat, amount });
    }

    move(transfer) {
      this.transfers.push(transfer);
      this.events.push({ kind: "moved", transfer, index: this.transfers.length - 1, pot: this.pot });
    }

    draw(seat, purpose) {
      const nonce = this.nextNonce;
      const recorded = this.rollsByNonce.get(nonce);
      if (!recorded) throw new RollMissing(nonce);
      if (!isInteger(recorded.face) || recorded.face < 1 || recorded.face > 6) {
        throw new Refused("invalid_roll", `roll nonce ${nonce} has face ${recorded.face}, not 1-6`);
      }
      this.nextNonce += 1;
      const roll = { nonce, seat, purpose, face: recorded.face, color: colorOf(recorded.face) };
      this.drawn.push(roll);
      return roll;
    }

    rolled(roll, result) {
      this.events.push({ kind: "rolled", ...roll, favor: this.favor, result });
    }

    settle(reason, payouts) {
      this.phase = "settled";
      this.outcome = { reason, payouts };
      this.events.push({ kind: "settled", reason, payouts });
    }

    // Before a pot is paid out the house takes its share of the whole pot: the rate rounded down (in
    // BigInt: a pot times 10000 may pass 2^53), then capped (docs/rules.md, "Rake").
    takeRake() {
      let amount = Number((BigInt(this.pot) * BigInt(this.rakeBps)) / 10000n);
      if (this.rakeCap !== null) amount = Math.min(amount, this.rakeCap);
      if (amount <= 0) return;
      this.pot -= amount;
      this.move({ kind: "rake", payer: "pot", payee: "revenue", amount });
    }

    // The whole pot to one seat, less the rake.
    payWholePot(seat, reason) {
      this.takeRake();
      const amount = this.pot;
      if (amount > 0) this.outOfPot("payout", seat, amount);
      this.settle(reason, [{ seat, amount }]);
    }

    // Equal shares; the indivisible remainder one unit at a time, clockwise from the Vigo.
    split(reason) {
      this.takeRake();
      const survivors = this.survivors();
      const share = Math.floor(this.pot / survivors.length);
      const remainder = this.pot % survivors.length;
      const payouts = survivors.map((seat, i) => ({ seat, amount: share + (i < remainder ? 1 : 0) }));
      // A share can be nothing once a rake has taken (almost) the whole pot: no transfer for it.
      for (const payout of payouts) if (payout.amount > 0) this.outOfPot("split", payout.seat, payout.amount);
      this.settle(reason, payouts);
    }

    cancel() {
      this.expectPhase("cancel", "open");
      this.phase = "cancelled";
      this.events.push({ kind: "cancelled" });
    }

    start(seat) {
      this.expectPhase("start", "open");
      this.expectSeat(seat, VIGO, "start");
      const short = [];
      for (let player = 1; player <= this.players; player++) if (!this.canPay(player, this.stake)) short.push(player);
      if (short.length) throw new Refused("cannot_pay", `seats ${short.join(", ")} cannot pay the stake of ${this.stake}`);
      const favor = this.draw(VIGO, "favor");
      this.favor = favor.color;
      this.rolled(favor, "favor");
      for (let player = 1; player <= this.players; player++) this.intoPot("ante", player, this.stake);
      this.beginPass(this.survivors());
    }

    beginPass(seats) {
      this.pass += 1;
      this.phase = "seeking";
      this.toRoll = seats;
      this.votes = new Map();
      this.events.push({ kind: "pass_started", pass: this.pass, seats: [...seats] });
    }

    roll(seat) {
      this.expectPhase("roll", "seeking", "challenge_favor", "challenge_roll");
      if (this.phase === "seeking") {
        this.expectSeat(seat, this.toRoll[0], "roll");
        const roll = this.draw(seat, "seek");
        const kept = roll.color === this.favor;
        if (!kept) this.inFavor[seat] = false;
        this.rolled(roll, kept ? "in_favor" : "eliminated");
        this.toRoll = this.toRoll.slice(1);
        if (!this.toRoll.length) this.endPass();
      } else if (this.phase === "challenge_favor") {
        this.expectSeat(seat, VIGO, "roll");
        const roll = this.draw(VIGO, "challenge_favor");
        this.favor = roll.color;
        this.rolled(roll, "new_favor");
        this.phase = "challenge_roll";
      } else {
        this.expectSeat(seat, this.challenger, "roll");
        const roll = this.draw(seat, "challenge");
        const won = roll.color === this.favor;
        if (!won) this.inFavor[seat] = false;
        this.rolled(roll, won ? "won" : "lost");
        if (won) this.payWholePot(seat, "challenge_won");
        else this.payWholePot(VIGO, "challenge_lost");
      }
    }

    endPass() {
      const survivors = this.survivors();
      this.events.push({ kind: "pass_ended", pass: this.pass, survivors });
      if (!survivors.length) return this.payWholePot(VIGO, "no_survivors");
      if (survivors.length === 1) {
        this.phase = "lone_survivor";
        return;
      }
      const contribution = this.stake * survivors.length;
      if (!this.canPay(VIGO, contribution)) {
        this.events.push({ kind: "vigo_bust", need: contribution, has: this.balances.get(VIGO) ?? 0, survivors });
        return this.split("vigo_bust");
      }
      this.intoPot("vigo_contribution", VIGO, contribution);
      this.phase = "voting";
      this.votes = new Map();
    }

    vote(seat, choice) {
      this.expectPhase("vote", "voting");
      if (seat === VIGO || !this.inFavor[seat]) throw new Refused("not_your_turn", `seat ${seat} is not a survivor and cannot vote`);
      if (this.votes.has(seat)) throw new Refused("already_voted", `seat ${seat} has already voted on this pass`);
      this.votes.set(seat, choice);
      this.events.push({ kind: "voted", seat, choice });
      if (choice === "roll_again") {
        this.events.push({ kind: "decided", choice });
        this.beginPass(this.survivors());
      } else if (this.survivors().every((survivor) => this.votes.get(survivor) === "split")) {
        this.events.push({ kind: "decided", choice: "split" });
        this.split("split");
      }
    }

    claim(seat) {
      this.expectPhase("claim", "lone_survivor");
      this.expectSeat(seat, this.survivors()[0], "claim");
      this.events.push({ kind: "claimed", seat });
      this.payWholePot(seat, "claimed");
    }

    challenge(seat) {
      this.expectPhase("challenge", "lone_survivor");
      this.expectSeat(seat, this.survivors()[0], "challenge");
      if (!this.canPay(seat, this.raise)) throw new Refused("challenge_unaffordable", `seat ${seat} cannot match the raise of ${this.raise}`);
      if (!this.canPay(VIGO, this.raise)) {
        this.events.push({ kind: "vigo_bust", need: this.raise, has: this.balances.get(VIGO) ?? 0, survivors: [seat] });
        return this.payWholePot(seat, "vigo_bust");
      }
      this.events.push({ kind: "challenged", seat });
      this.intoPot("challenge_raise", VIGO, this.raise);
      this.intoPot("challenge_match", seat, this.raise);
      this.challenger = seat;
      this.phase = "challenge_favor";
    }

    // The shell decided a deadline passed; the rules apply the turn's default.
    timeout() {
      const phase = this.phase;
      if (phase === "open") {
        this.events.push({ kind: "timed_out", phase, seats: [], default: "cancel" });
        return this.cancel();
      }
      if (phase === "seeking" || phase === "challenge_favor" || phase === "challenge_roll") {
        const seat = phase === "seeking" ? this.toRoll[0] : phase === "challenge_favor" ? VIGO : this.challenger;
        this.events.push({ kind: "timed_out", phase, seats: [seat], default: "roll" });
        return this.roll(seat);
      }
      if (phase === "lone_survivor") {
        const seat = this.survivors()[0];
        this.events.push({ kind: "timed_out", phase, seats: [seat], default: "claim" });
        return this.claim(seat);
      }
      const silent = this.survivors().filter((seat) => !this.votes.has(seat));
      this.events.push({ kind: "timed_out", phase, seats: silent, default: "split" });
      for (const seat of silent) if (this.phase === "voting") this.vote(seat, "split");
    }
  }

  function readBalances(record) {
    const balances = new Map();
    const given = record.balances === undefined ? {} : record.balances;
    if (!isObject(given)) throw new Refused("invalid_action", "balances is not an object");
    for (const [seat, amount] of Object.entries(given)) {
      if (!/^-?\d+$/.test(seat) || !isInteger(amount)) throw new Refused("invalid_action", `balance ${JSON.stringify(seat)}: ${JSON.stringify(amount)} is not a seat and an integer`);
      balances.set(Number(seat), amount);
    }
    return balances;
  }

  const sameTransfer = (a, b) => a.kind === b.kind && a.payer === b.payer && a.payee === b.payee && a.amount === b.amount;
  const describe = (transfer) => `${transfer.kind} ${transfer.amount} from ${transfer.payer} to ${transfer.payee}`;

  // Replays the proof's actions over its rolls. Returns the steps (for the story), the transfers and the
  // outcome the rules reach, and `problem` ({message, where}) for the first difference with the proof, or null.
  function replayRules(proof) {
    const result = { steps: [], transfers: [], outcome: null, rolled: [], problem: null, marks: { rolls: new Set(), transfers: new Set() } };
    const players = proof.game.seats.length - 1;
    const { stake, challenge_raise: raise } = proof.game;
    const terms = [];
    if (!isInteger(stake) || stake <= 0) terms.push(`the stake must be positive, not ${stake}`);
    if (!isInteger(raise) || raise <= 0) terms.push(`the challenge raise must be positive, not ${raise}`);
    if (players < MIN_PLAYERS || players > MAX_PLAYERS) terms.push(`a table seats ${MIN_PLAYERS} to ${MAX_PLAYERS} players besides the Vigo, not ${players}`);
    const { rake_bps: rakeBps, rake_cap: rakeCap } = rakeTermsOf(proof.game);
    if (!isInteger(rakeBps) || rakeBps < 0 || rakeBps > 10000) terms.push(`the rake is 0 to 10000 basis points of the pot, not ${rakeBps}`);
    if (rakeCap !== null && (!isInteger(rakeCap) || rakeCap < 0)) terms.push(`the rake cap must not be negative, not ${rakeCap}`);
    if (terms.length) {
      result.problem = { message: `game terms: ${terms.join("; ")}`, where: { terms: true } };
      return result;
    }
    const rollsByNonce = new Map(proof.rolls.map((entry) => [entry.nonce, entry]));
    const table = new Table({ stake, challenge_raise: raise, players, rake_bps: rakeBps, rake_cap: rakeCap }, rollsByNonce);
    for (const [index, record] of proof.actions.entries()) {
      const step = { index, record, events: [], error: null };
      result.steps.push(step);
      try {
        table.apply(record, readBalances(record), step.events);
      } catch (error) {
        if (!(error instanceof Refused || error instanceof RollMissing)) throw error;
        step.error = error.message;
        const message =
          error instanceof RollMissing ? `action ${index}: ${error.message}` : `action ${index} (${JSON.stringify(record.action)}): the rules refuse it: ${error.message}`;
        result.problem = { message, where: { action: index } };
        break;
      }
    }
    result.transfers = table.transfers;
    result.rolled = table.drawn;
    result.over = table.over;
    result.outcome = table.phase === "settled" ? table.outcome : table.phase === "cancelled" ? { reason: "cancelled", payouts: [] } : null;
    compareWithProof(proof, result, table);
    return result;
  }

  // Same order as the Python replay: actions, roll count, each roll's seat and purpose, game over, transfers,
  // outcome. The first difference is the message; every disagreeing row is marked for the story.
  function compareWithProof(proof, result, table) {
    const problems = [];
    const recordedRolls = [...proof.rolls].sort((a, b) => a.nonce - b.nonce);
    if (!result.problem && result.rolled.length !== recordedRolls.length) {
      problems.push({ message: `the rules draw ${result.rolled.length} rolls; the proof records ${recordedRolls.length}`, where: { rolls: true } });
    }
    result.rolled.forEach((drawn, i) => {
      const recorded = recordedRolls[i];
      if (recorded && (recorded.seat !== drawn.seat || recorded.purpose !== drawn.purpose)) {
        result.marks.rolls.add(recorded.nonce);
        problems.push({
          message: `roll nonce ${recorded.nonce}: the rules have seat ${drawn.seat} rolling for ${drawn.purpose}, the proof says seat ${recorded.seat} for ${recorded.purpose}`,
          where: { nonce: recorded.nonce },
        });
      }
    });
    if (!result.problem && !table.over) {
      problems.push({ message: `after every recorded action the game is still in phase ${table.phase}`, where: { actions: true } });
    }
    const recorded = proof.transfers;
    const length = Math.max(recorded.length, result.transfers.length);
    let firstTransfer = null;
    for (let i = 0; i < length; i++) {
      const expected = result.transfers[i];
      const found = recorded[i];
      if (expected && found && sameTransfer(expected, found)) continue;
      if (i < recorded.length) result.marks.transfers.add(i);
      if (firstTransfer !== null) continue;
      firstTransfer =
        expected && found
          ? `transfer ${i}: the rules move ${describe(expected)}, the proof records ${describe(found)}`
          : `the rules make ${result.transfers.length} transfers; the proof records ${recorded.length}`;
    }
    if (firstTransfer !== null && !result.problem) problems.push({ message: firstTransfer, where: { transfers: true } });
    const expectedOutcome = result.outcome ?? { reason: "cancelled", payouts: [] };
    result.outcomeAgrees = canonicalize(proof.outcome) === canonicalize(expectedOutcome);
    if (!result.outcomeAgrees && !result.problem) {
      problems.push({ message: `outcome: the rules end with ${canonicalize(expectedOutcome)}, the proof says ${canonicalize(proof.outcome)}`, where: { outcome: true } });
    }
    if (!result.problem && problems.length) result.problem = problems[0];
  }

  function checkReplay(proof, replay) {
    if (replay.problem) return check("replay", [replay.problem.message]);
    return check(
      "replay",
      [],
      `the rules replay ${proof.actions.length} actions over ${proof.rolls.length} rolls and reproduce all ${proof.transfers.length} transfers and the outcome`,
    );
  }

  // ---- the beacon mode (as pokna_verify.fairness.beacon and beacon_proof) ------------------------------------------

  // A proof that says anything of beacons is judged as one, so a half-edited mode cannot skip the check.
  const isBeaconProof = (proof) =>
    proof.protocol === BEACON_PROTOCOL ||
    (proof.fairness_mode ?? "stake") !== "stake" ||
    "beacon_chain" in proof ||
    proof.rolls.some((entry) => "beacon" in entry || "accepted_at" in entry);

  function modeProblems(proof) {
    if (!isBeaconProof(proof)) {
      return proof.protocol === PROTOCOL ? [] : [`protocol is '${proof.protocol}', this verifier knows only '${PROTOCOL}' and '${BEACON_PROTOCOL}'`];
    }
    const problems = [];
    if (proof.protocol !== BEACON_PROTOCOL) problems.push(`protocol is '${proof.protocol}', a beacon-mode proof's is '${BEACON_PROTOCOL}'`);
    if (proof.fairness_mode !== "beacon") problems.push(`fairness_mode is ${quoted(proof.fairness_mode ?? "stake")}, a beacon-mode proof's is 'beacon'`);
    if (!isObject(proof.beacon_chain)) problems.push("beacon_chain is missing");
    return problems;
  }

  const roundPublishedAt = (chain, round) => (chain.genesis_time + (round - 1) * chain.period) * 1000;
  const firstRoundAfter = (chain, acceptedAtMs) => {
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
  async function roundProblem(chain, round) {
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
    const message = bls.hash(new Uint8Array(await crypto.subtle.digest("SHA-256", number)), BEACON_DST);
    let verifies;
    try {
      verifies = bls.verify(hexBytes(round.signature), message, hexBytes(chain.public_key));
    } catch (error) {
      return `signature or public key is not a valid curve point (${error.message})`;
    }
    if (!verifies) return `the BLS signature does not verify for round ${round.round} under the chain's public key`;
    const derived = toHex(await crypto.subtle.digest("SHA-256", hexBytes(round.signature)));
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

  // `trusted`: quicknet, and the chain the page's address named if it could be read.
  async function checkBeacon(proof, trusted) {
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
  function chainFromDrandInfo(info) {
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

  // ---- verifying ------------------------------------------------------------------------------------------

  const CHECK_ORDER = ["protocol", "commitment", "client_seed_format", "client_seed", "seats", "nonces", "rolls", "signature", "receipt", "replay"];

  // The whole verification of one document, without touching the page. options: {keyRing, keyRingReason,
  // receipt (the player's own copy, if they kept it), beaconChains (drand chains to trust besides quicknet)}.
  // Throws Unusable for input that is no proof at all.
  async function verifyDocument(value, options = {}) {
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
      // A replay that crashes on this proof is a failed replay, not a crashed page.
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
    report.verdict = verdictOf(report);
    return report;
  }

  function verdictOf(report) {
    const failed = report.checks.filter((c) => c.status === "fail").map((c) => c.name);
    const skipped = report.checks.filter((c) => c.status === "not run").map((c) => c.name);
    if (failed.length) return { state: "invalid", text: "INVALID", detail: `failed: ${failed.join(", ")}` };
    if (report.mode === "unrevealed") {
      const status = report.link && report.link.status ? report.link.status.replace("_", " ") : "not over";
      return { state: "unrevealed", text: "NOT REVEALED YET", detail: `the game is ${status}; the seed is revealed when it ends` };
    }
    if (skipped.length) return { state: "partial", text: "PARTLY VERIFIED", detail: `nothing failed, but not run: ${skipped.join(", ")}` };
    return { state: "valid", text: "VALID", detail: "every check passed" };
  }

  // ---- the story --------------------------------------------------------------------------------------------

  const $ = (selector) => document.querySelector(selector);

  // textContent only: a proof is untrusted input.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else node.setAttribute(name, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // The operator's display labels of the document shown (signed in its game terms), by seat number.
  let seatLabels = new Map();
  function learnLabels(game) {
    const seats = isObject(game) && Array.isArray(game.seats) ? game.seats : [];
    seatLabels = new Map(seats.filter((seat) => isObject(seat) && typeof seat.label === "string").map((seat) => [seat.seat, seat.label]));
  }
  const labelled = (seat, plain) => (seatLabels.has(seat) ? (seat === VIGO ? `${seatLabels.get(seat)} (the Vigo)` : seatLabels.get(seat)) : plain);
  const seatName = (seat) => labelled(seat, seat === VIGO ? "the Vigo" : isInteger(seat) ? `Player ${seat}` : `seat ${seat}`);
  const SeatName = (seat) => labelled(seat, seat === VIGO ? "The Vigo" : seatName(seat));
  const partyName = (party) => (party === "pot" ? "the pot" : party === "revenue" ? "the house (rake)" : seatName(party));
  const mono = (text) => el("code", {}, text);
  function listSeats(seats) {
    if (seats.length === 1) return seatName(seats[0]);
    if (seats.includes(VIGO) || seats.some((seat) => seatLabels.has(seat))) return `${seats.slice(0, -1).map(seatName).join(", ")} and ${seatName(seats[seats.length - 1])}`;
    return `Players ${seats.slice(0, -1).join(", ")} and ${seats[seats.length - 1]}`;
  }
  const signed = (amount) => (amount > 0 ? `+${amount}` : String(amount));

  const PURPOSE = {
    favor: "rolls the favor",
    seek: "seeks favor",
    challenge_favor: "rolls a new favor",
    challenge: "rolls the challenge",
  };

  const RESULT = {
    favor: (roll) => `the favor is ${roll.color}`,
    in_favor: () => "in favor",
    eliminated: () => "eliminated",
    new_favor: (roll) => `the new favor is ${roll.color}`,
    won: () => "challenge won",
    lost: () => "challenge lost",
  };

  const REASON = {
    no_survivors: "no player stayed in favor, so the Vigo takes the pot",
    claimed: "the lone survivor claimed the pot",
    challenge_won: "the challenger matched the new favor and won the whole pot",
    challenge_lost: "the challenger missed the new favor; the Vigo takes the whole pot",
    split: "the survivors split the pot",
    vigo_bust: "the Vigo could not pay, so the survivors took the pot (Vigo bust)",
    cancelled: "the game was cancelled before it started; no money moved",
  };

  const sayTransfer = (t) => `${t.kind} of ${t.amount} from ${partyName(t.payer)} to ${partyName(t.payee)}`;
  const sayOutcome = (o) => `${o.reason}${o.payouts.length ? `, paying ${o.payouts.map((p) => `${seatName(p.seat)} ${p.amount}`).join(", ")}` : ""}`;

  const die = (face, color) =>
    el("span", { class: `die ${color === "red" || color === "blue" ? color : "odd"}`, title: `face ${face}, ${color}` }, String(face));

  function rollLine(event, rows) {
    const row = rows.find((r) => r.entry.nonce === event.nonce);
    const bad = row && !row.match;
    return el(
      "li",
      { class: `event roll${bad ? " bad" : ""}`, "data-nonce": event.nonce },
      die(event.face, event.color),
      ` Roll #${event.nonce}: ${SeatName(event.seat)} ${PURPOSE[event.purpose]}: ${event.face}, ${event.color}`,
      " → ",
      el("strong", {}, RESULT[event.result](event)),
      event.purpose === "seek" ? ` (favor: ${event.favor})` : "",
      event.purpose === "challenge" ? ` (new favor: ${event.favor})` : "",
      bad ? el("span", { class: "flag" }, " recomputed face differs") : "",
    );
  }

  function moveLine(event, report) {
    const { transfer, pot } = event;
    const bad = report.replay.marks.transfers.has(event.index);
    const who = transfer.payee === "revenue" ? "The house" : SeatName(transfer.payer === "pot" ? transfer.payee : transfer.payer);
    const text = {
      ante: `${who} antes ${transfer.amount} into the pot`,
      vigo_contribution: `The Vigo pays ${transfer.amount} into the pot: one stake for each survivor`,
      challenge_raise: `The Vigo raises ${transfer.amount}`,
      challenge_match: `${who} matches the raise: ${transfer.amount}`,
      payout: `The pot pays ${transfer.amount} to ${seatName(transfer.payee)}`,
      split: `${who} gets a share of ${transfer.amount}`,
      rake: `The house takes its rake of ${transfer.amount} before the pot is paid out`,
    }[transfer.kind];
    const recorded = report.proof.transfers[event.index];
    return el(
      "li",
      { class: `event money${bad ? " bad" : ""}` },
      el("span", { class: "coin" }, "¤"),
      ` ${text} (pot ${pot})`,
      bad ? el("span", { class: "flag" }, recorded ? ` — the proof records ${sayTransfer(recorded)}` : " — missing from the proof") : "",
    );
  }

  function eventLine(event, report, step) {
    switch (event.kind) {
      case "rolled":
        return rollLine(event, report.rows);
      case "moved":
        return moveLine(event, report);
      case "pass_started":
        return event.pass === 1 ? null : el("li", { class: "event note" }, `Pass ${event.pass}: ${listSeats(event.seats)} roll again against the same favor.`);
      case "pass_ended":
        return el(
          "li",
          { class: "event note" },
          event.survivors.length === 0
            ? `End of pass ${event.pass}: no one is still in favor.`
            : event.survivors.length === 1
              ? `End of pass ${event.pass}: ${seatName(event.survivors[0])} is the lone survivor and may claim the pot or challenge the Vigo.`
              : `End of pass ${event.pass}: ${listSeats(event.survivors)} are still in favor.`,
        );
      case "vigo_bust":
        return el("li", { class: "event note" }, `The Vigo cannot pay ${event.need} (it had ${event.has}): Vigo bust.`);
      case "voted":
        if (step.record.action === "vote") return null;
        return el("li", { class: "event" }, `${SeatName(event.seat)} votes ${event.choice === "split" ? "split" : "roll again"}.`);
      case "decided":
        return el(
          "li",
          { class: "event note" },
          event.choice === "split" ? "Every survivor voted split: the pot is divided." : "One roll-again vote decides: every survivor rolls again.",
        );
      case "challenged":
        if (step.record.action === "challenge") return null;
        return el("li", { class: "event" }, `${SeatName(event.seat)} challenges the Vigo.`);
      case "claimed":
        if (step.record.action === "claim") return null;
        return el("li", { class: "event" }, `${SeatName(event.seat)} claims the pot.`);
      case "timed_out":
        return el(
          "li",
          { class: "event note" },
          `Time ran out${event.seats.length ? ` for ${listSeats(event.seats)}` : ""}: the default applies (${event.default.replace("_", " ")}).`,
        );
      case "settled":
        return el("li", { class: "event end" }, `Game over: ${REASON[event.reason]}.`);
      case "cancelled":
        return el("li", { class: "event end" }, `Game over: ${REASON.cancelled}.`);
      default:
        return null;
    }
  }

  function actionTitle(record) {
    const who = SeatName(record.seat);
    switch (record.action) {
      case "start":
        return `${who} starts the game`;
      case "roll":
        return `${who} rolls`;
      case "vote":
        return `${who} votes ${record.choice === "roll_again" ? "to roll again" : record.choice}`;
      case "claim":
        return `${who} claims`;
      case "challenge":
        return `${who} challenges`;
      case "cancel":
        return "The game is cancelled";
      case "timeout":
        return "A deadline passes";
      default:
        return `Unknown action ${JSON.stringify(record.action)}`;
    }
  }

  function renderSteps(report) {
    const list = $("#steps");
    const { replay, proof } = report;
    for (const step of replay.steps) {
      const bad = step.error !== null;
      list.append(
        el(
          "li",
          { id: `step-${step.index}`, "data-action": step.index, "data-status": bad ? "fail" : "pass", class: bad ? "step bad" : "step" },
          el("div", { class: "step-title" }, el("span", { class: "step-number" }, String(step.index + 1)), actionTitle(step.record)),
          el("ul", { class: "events" }, step.events.map((event) => eventLine(event, report, step))),
          bad ? el("p", { class: "flag" }, `The rules refuse this action: ${step.error}`) : null,
        ),
      );
    }
    const skipped = proof.actions.length - replay.steps.length;
    if (skipped > 0) {
      list.append(
        el(
          "li",
          { class: "step skipped", "data-status": "not run" },
          `The ${skipped} later recorded action${skipped === 1 ? " was" : "s were"} not replayed: `,
          proof.actions.slice(replay.steps.length).map((record) => actionTitle(record)).join("; "),
          ".",
        ),
      );
    }
    if (!proof.actions.length) list.append(el("li", { class: "step skipped" }, "The proof records no actions."));
  }

  // A table that becomes one card per row on a narrow screen: every cell carries its column's name.
  function cardTable(id, columns, rows) {
    const table = el("table", { id, class: "cards" }, el("thead", {}, el("tr", {}, columns.map((name) => el("th", { scope: "col" }, name)))));
    const body = el("tbody");
    for (const row of rows) {
      body.append(el("tr", row.attributes, row.cells.map((content, i) => el("td", { "data-label": columns[i] }, content))));
    }
    table.append(body);
    return table;
  }

  function renderRolls(report) {
    const consequence = new Map();
    for (const step of report.replay.steps) for (const event of step.events) if (event.kind === "rolled") consequence.set(event.nonce, RESULT[event.result](event));
    const rows = report.rows.map((row, i) => {
      const { entry, computed } = row;
      const flagged = !row.match || report.marks.rolls.has(entry.nonce) || report.marks.rollIndexes.has(i) || report.replay.marks.rolls.has(entry.nonce);
      return {
        attributes: { id: `roll-${i}`, "data-nonce": entry.nonce, "data-match": String(row.match), class: flagged ? "bad" : "" },
        cells: [
          `#${entry.nonce}`,
          SeatName(entry.seat),
          entry.purpose,
          el("span", {}, die(entry.face, entry.color), ` ${entry.color}`),
          computed ? el("span", {}, die(computed.face, computed.color), ` ${computed.color}`) : "not computed",
          computed ? mono(computed.f.toFixed(10)) : "",
          consequence.get(entry.nonce) ?? "",
          flagged ? el("strong", { class: "flag" }, "NO") : "yes",
        ],
      };
    });
    $("#rolls-table").replaceChildren(cardTable("rolls", ["Roll", "Who", "Purpose", "Recorded", "Recomputed", "f", "Result", "Matches"], rows));
    $("#rolls-beacon").hidden = !(report.proof && isBeaconProof(report.proof));
  }

  function renderMoney(report) {
    const { proof, replay } = report;
    let pot = 0;
    const rows = proof.transfers.map((transfer, i) => {
      pot += transfer.payee === "pot" ? transfer.amount : transfer.payer === "pot" ? -transfer.amount : 0;
      const bad = replay.marks.transfers.has(i) || report.marks.transfers.has(i);
      const expected = replay.transfers[i];
      return {
        attributes: { id: `transfer-${i}`, "data-transfer": i, "data-agree": String(!bad), class: bad ? "bad" : "" },
        cells: [
          transfer.kind,
          transfer.payer === "pot" ? "The pot" : SeatName(transfer.payer),
          partyName(transfer.payee),
          String(transfer.amount),
          String(pot),
          bad ? el("strong", { class: "flag" }, expected ? `NO: the rules make ${sayTransfer(expected)}` : "NO: the rules make no such transfer") : "yes",
        ],
      };
    });
    const extra = replay.transfers.slice(proof.transfers.length);
    for (const missing of extra) {
      rows.push({ attributes: { "data-missing": "true", class: "bad" }, cells: [missing.kind, partyName(missing.payer), partyName(missing.payee), String(missing.amount), "", el("strong", { class: "flag" }, "MISSING from the proof")] });
    }
    $("#transfers-table").replaceChildren(cardTable("transfers", ["Kind", "From", "To", "Amount", "Pot after", "Rules agree"], rows));
    if (!proof.transfers.length && !extra.length) $("#transfers-table").append(el("p", {}, "No money moved."));

    const netRows = netResults(proof).map((row) => ({
      attributes: { "data-seat": row.seat, "data-net": row.net, class: row.net > 0 ? "up" : row.net < 0 ? "down" : "" },
      cells: [SeatName(row.seat), String(row.paid), String(row.received), el("strong", {}, signed(row.net))],
    }));
    $("#net-table").replaceChildren(cardTable("net", ["Seat", "Paid in", "Received", "Net"], netRows));

    const outcome = proof.outcome;
    const agrees = replay.outcomeAgrees;
    const reason = typeof outcome.reason === "string" ? outcome.reason : JSON.stringify(outcome.reason);
    const payouts = Array.isArray(outcome.payouts) ? outcome.payouts : [];
    $("#outcome").dataset.agree = String(agrees);
    $("#outcome").className = agrees ? "" : "bad";
    $("#outcome").replaceChildren(
      el("p", {}, el("strong", {}, "Outcome recorded: "), mono(reason), ` — ${REASON[reason] ?? "not a reason the rules know"}.`),
      payouts.length ? el("p", {}, "Payouts: ", payouts.map((p) => `${seatName(p.seat)} ${p.amount}`).join(", "), ".") : null,
      el(
        "p",
        {},
        agrees
          ? "The rules replay ends the same way."
          : el("strong", { class: "flag" }, `The rules replay ends differently: ${replay.outcome ? sayOutcome(replay.outcome) : "the game is not over"}.`),
      ),
    );
  }

  function renderSeats(report, seeds, revealed) {
    const rows = seeds.map((entry) => ({
      attributes: { "data-seat": entry.seat },
      cells: [
        SeatName(entry.seat),
        mono(String(entry.account_id)),
        entry.client_seed === null || entry.client_seed === undefined ? el("em", {}, "not set yet") : mono(entry.client_seed),
        entry.source === "player" ? "the player" : entry.source === "server" ? "the server (the seat never set one)" : entry.source ? String(entry.source) : "—",
      ],
    }));
    $("#seeds-table").replaceChildren(cardTable("seeds", ["Seat", "Account", "Client seed", "Chosen by"], rows));
    $("#game-client-seed").replaceChildren(
      revealed
        ? el("p", {}, "The game client seed is SHA-256 of these seeds joined by newlines, in seat order: ", mono(report.proof.client_seed), statusNote(report, "client_seed"))
        : el("p", {}, "Seeds can change until the game starts; the game client seed is fixed then."),
    );
  }

  function statusNote(report, name) {
    const found = report.checks.find((c) => c.name === name);
    if (!found) return null;
    return el("span", { class: `note-${found.status.replace(" ", "-")}` }, found.status === "pass" ? " ✓ recomputed" : found.status === "fail" ? " ✗ does not match" : " (not checked)");
  }

  function renderCommitment(report) {
    const receipt = report.receipt;
    const hash = report.proof ? report.proof.server_seed_hash : receipt ? receipt.server_seed_hash : "";
    const parts = [];
    if (receipt) {
      parts.push(el("p", {}, "At ", el("strong", {}, String(receipt.created_at)), ", when the game was created and before any client seed or roll, the operator committed to a secret server seed by publishing its SHA-256 hash in a signed receipt:"));
    } else {
      parts.push(el("p", {}, "The operator committed to a secret server seed by publishing its SHA-256 hash (no commitment receipt was given, so the time of the commitment is not shown):"));
    }
    parts.push(el("p", { class: "hash" }, mono(String(hash))));
    if (report.proof) {
      parts.push(el("p", {}, "After the game it revealed the seed: ", mono(report.proof.server_seed), statusNote(report, "commitment")));
    } else {
      parts.push(el("p", {}, el("strong", {}, "Not revealed yet."), " The seed is published when the game ends; then every roll can be recomputed here."));
    }
    $("#commitment").replaceChildren(...parts);
  }

  function renderFavor(report) {
    const favor = report.replay.steps.flatMap((step) => step.events).find((event) => event.kind === "rolled" && event.purpose === "favor");
    $("#favor").replaceChildren(
      favor
        ? el(
            "p",
            {},
            die(favor.face, favor.color),
            ` Roll #0: the Vigo rolled ${favor.face}, so the favor is `,
            el("strong", {}, favor.color),
            `. A player stays in favor by rolling ${favor.color} (faces ${favor.color === "red" ? "1–3" : "4–6"}); any other face eliminates them.`,
          )
        : el("p", {}, "No favor was rolled: the game never started."),
    );
  }

  function renderChecks(report) {
    const list = $("#checks");
    list.replaceChildren();
    for (const c of report.checks) {
      list.append(
        el(
          "li",
          { "data-check": c.name, "data-status": c.status, class: `check ${c.status.replace(" ", "-")}` },
          el("span", { class: "pill" }, c.status.toUpperCase()),
          el("span", { class: "check-label" }, CHECK_LABEL[c.name] || c.name),
          el("span", { class: "check-name" }, ` (${c.name})`),
          el("div", { class: "check-message" }, c.message),
          c.status === "fail" ? whereLink(c, report) : null,
        ),
      );
    }
  }

  const CHECK_LABEL = {
    shape: "The proof is well formed",
    protocol: "Protocol and document type are known",
    commitment: "The revealed server seed hashes to the commitment",
    client_seed_format: "Every client seed is well formed",
    client_seed: "The game client seed combines every seat's seed",
    seats: "Seats and accounts agree throughout the proof",
    nonces: "Roll numbers run 0, 1, 2, … without gaps",
    rolls: "Every face recomputed with WebCrypto",
    beacon: "Every drand round verifies (BLS) and was published after its roll was drawn",
    signature: "The proof is signed by a published key",
    receipt: "The commitment receipt matches and is signed by a published key",
    replay: "Rules replay: every transfer and the outcome follow from the decisions and rolls",
  };

  // Points a failing check at the row of the story it blames.
  function whereLink(c, report) {
    let target = null;
    if (report.mode === "revealed") {
      const badRoll = report.rows.findIndex((row, i) => !row.match || report.marks.rollIndexes.has(i) || report.marks.rolls.has(row.entry.nonce) || report.replay.marks.rolls.has(row.entry.nonce));
      if ((c.name === "rolls" || c.name === "nonces" || c.name === "seats") && badRoll >= 0) target = `#roll-${badRoll}`;
      if (c.name === "seats" && !target && report.marks.transfers.size) target = `#transfer-${[...report.marks.transfers][0]}`;
      if (c.name === "replay") {
        const where = report.replay.problem.where;
        if (where.action !== undefined) target = `#step-${where.action}`;
        else if (where.nonce !== undefined) target = `#roll-${report.rows.findIndex((row) => row.entry.nonce === where.nonce)}`;
        else if (where.transfers && report.replay.marks.transfers.size) target = `#transfer-${[...report.replay.marks.transfers][0]}`;
        else if (where.transfers) target = "#transfers-table";
        else if (where.outcome) target = "#outcome";
        else target = "#steps";
      }
      if (["commitment", "receipt"].includes(c.name)) target = "#commitment";
      if (["client_seed", "client_seed_format"].includes(c.name)) target = "#seeds-table";
    }
    return target ? el("a", { href: target, class: "where" }, "show the row") : null;
  }

  // Paid in and received per seat, from the recorded transfers.
  function netResults(proof) {
    const seats = proof.game.seats.map((seat) => seat.seat);
    const paid = new Map(seats.map((seat) => [seat, 0]));
    const received = new Map(seats.map((seat) => [seat, 0]));
    for (const transfer of proof.transfers) {
      if (transfer.payee === "pot" && paid.has(transfer.payer)) paid.set(transfer.payer, paid.get(transfer.payer) + transfer.amount);
      if (transfer.payer === "pot" && received.has(transfer.payee)) received.set(transfer.payee, received.get(transfer.payee) + transfer.amount);
    }
    return seats.map((seat) => ({ seat, paid: paid.get(seat), received: received.get(seat), net: received.get(seat) - paid.get(seat) }));
  }

  // One seat's result in words: a seat that got back exactly what it paid in did not "win nothing".
  function sayGain(row, stake) {
    const who = SeatName(row.seat);
    const paid = `paid in ${row.paid}, received ${row.received}`;
    if (row.net > 0) return `${who} gained ${row.net} (${paid}).`;
    if (row.net < 0) return `${who} lost ${-row.net} (${paid}).`;
    if (row.paid === 0) return `${who} neither paid nor received anything.`;
    if (row.paid === stake) return `${who} got their ante back (${paid}): net 0.`;
    return `${who} got back the ${row.paid} they paid in: net 0.`;
  }

  function sayRake(game) {
    const { rake_bps: bps, rake_cap: cap } = rakeTermsOf(game);
    if (!bps) return "";
    return `, a rake of ${bps} basis points of each pot paid out${cap === null ? "" : ` (at most ${cap})`}`;
  }

  function renderSummary(report) {
    const { proof } = report;
    const parts = [];
    const gameId = proof ? proof.game_id : report.link ? report.link.game_id : report.receipt ? report.receipt.game_id : "";
    if (gameId) parts.push(el("p", {}, "Game ", mono(String(gameId)), report.link && report.link.status ? ` · ${report.link.status.replace("_", " ")}` : ""));
    if (report.mode === "unrevealed" && report.receipt && isObject(report.receipt.game)) {
      const { stake, challenge_raise: raise } = report.receipt.game;
      const players = report.clientSeeds.length - 1;
      parts.push(el("p", {}, players > 0 ? `The Vigo and ${players} player${players === 1 ? "" : "s"}; ` : "", `stake ${stake}, challenge raise ${raise}${sayRake(report.receipt.game)} (amounts in minor units).`));
    }
    if (seatLabels.size) parts.push(el("p", { id: "labels-note", class: "muted" }, "Seats are named as the operator named them; the names are signed into the game's terms with the rest."));
    if (report.mode === "revealed") {
      const { stake, challenge_raise: raise, seats } = proof.game;
      parts.push(el("p", {}, `The Vigo and ${seats.length - 1} player${seats.length === 2 ? "" : "s"}; stake ${stake}, challenge raise ${raise}${sayRake(proof.game)} (amounts in minor units).`));
      const reason = proof.outcome.reason;
      if (REASON[reason]) parts.push(el("p", {}, el("strong", {}, "How it ended: "), `${REASON[reason]}.`));
      if (proof.transfers.length) {
        parts.push(el("p", {}, el("strong", {}, "Who gained what, as recorded: ")), el("ul", { id: "gains" }, ...netResults(proof).map((row) => el("li", { "data-seat": row.seat }, sayGain(row, stake)))));
      }
    }
    $("#summary").replaceChildren(...parts);
    const problems = $("#verdict-problems");
    problems.replaceChildren();
    const failed = report.checks.filter((c) => c.status === "fail");
    const skipped = report.checks.filter((c) => c.status === "not run");
    for (const c of failed) {
      problems.append(el("li", { "data-check": c.name }, el("strong", {}, `${CHECK_LABEL[c.name] || c.name}: `), mono(c.message), " ", whereLink(c, report)));
    }
    if (!failed.length && report.mode === "revealed") {
      for (const c of skipped) problems.append(el("li", { "data-check": c.name }, el("strong", {}, `Not run: ${CHECK_LABEL[c.name] || c.name}. `), c.message));
    }
    const passed = report.checks.filter((c) => c.status === "pass").length;
    if (report.mode === "unrevealed" && !failed.length) {
      const receipt = report.checks.find((c) => c.name === "receipt");
      problems.append(
        el("li", { class: "muted" }, receipt.status === "pass" ? "The commitment receipt is signed by a published key. " : `The commitment receipt was not checked: ${receipt.message}. `,
          "The other checks run once the seed is revealed. ", el("a", { href: "#checks-section" }, "All checks")),
      );
      return;
    }
    problems.append(el("li", { class: "muted" }, `${passed} of ${report.checks.length} checks passed. `, el("a", { href: "#checks-section" }, "All checks")));
  }

  function setVerdict(verdict) {
    const node = $("#verdict");
    node.dataset.state = verdict.state;
    node.textContent = verdict.text;
    $("#verdict-detail").textContent = verdict.detail;
    $("#verdict-box").dataset.state = verdict.state;
  }

  function clearStory() {
    for (const id of ["#summary", "#verdict-problems", "#checks", "#commitment", "#seeds-table", "#game-client-seed", "#favor", "#steps", "#rolls-table", "#transfers-table", "#net-table", "#outcome"]) {
      $(id).replaceChildren();
    }
    $("#story").hidden = true;
    $("#rolls-beacon").hidden = true;
    $("#checks-section").hidden = true;
    $("#game-sections").hidden = true;
  }

  function render(report) {
    clearStory();
    learnLabels(report.proof ? report.proof.game : report.receipt ? report.receipt.game : null);
    setVerdict(report.verdict);
    renderSummary(report);
    renderChecks(report);
    $("#checks-section").hidden = false;
    if (report.mode === "malformed") return;
    $("#story").hidden = false;
    renderCommitment(report);
    if (report.mode === "unrevealed") {
      renderSeats(report, report.clientSeeds, false);
      return;
    }
    renderSeats(report, report.proof.client_seeds, true);
    $("#game-sections").hidden = false;
    renderFavor(report);
    renderSteps(report);
    renderRolls(report);
    renderMoney(report);
  }

  function showUnusable(error) {
    clearStory();
    setVerdict({ state: "unusable", text: error.headline || "UNUSABLE", detail: error.message });
    $("#load").open = true;
  }

  // ---- the page -------------------------------------------------------------------------------------------

  // ?proof= takes a bare token, the path /v1/fairness/proofs/<token>, or a full link on this site (even a
  // link to this page with its own ?proof=).
  function linkPath(value, depth = 0) {
    const text = value.trim();
    if (LINK_TOKEN.test(text)) return LINK_PATH + text;
    if (text.startsWith(LINK_PATH) && LINK_TOKEN.test(text.slice(LINK_PATH.length))) return text;
    let url;
    try {
      url = new URL(text);
    } catch {
      throw new Unusable(`“${text}” is not a proof link: give the token (32 or more letters, digits, - or _), ${LINK_PATH}<token>, or a link on this site`, "NOT A PROOF LINK");
    }
    if (url.origin !== location.origin) {
      throw new Unusable(`this page loads proofs from its own site (${location.origin}) only; open the link on ${url.origin}, or download the proof and upload it here`, "NOT A PROOF LINK");
    }
    if (depth === 0 && url.searchParams.has("proof")) return linkPath(url.searchParams.get("proof"), 1);
    return linkPath(url.pathname, 1);
  }

  async function fetchJson(path) {
    let response;
    try {
      response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
    } catch (error) {
      const offline = location.protocol === "file:" ? " (this page was opened as a file: paste or upload the document instead)" : "";
      throw new Unusable(`cannot reach ${path}: ${error.message}${offline}`, "CANNOT LOAD");
    }
    if (response.status === 404) return { status: 404, body: null };
    if (!response.ok) throw new Unusable(`${path} answered HTTP ${response.status}`, "CANNOT LOAD");
    try {
      return { status: response.status, body: await response.json() };
    } catch (error) {
      throw new Unusable(`${path} did not answer JSON: ${error.message}`, "CANNOT LOAD");
    }
  }

  // The pasted key ring wins; otherwise the published one, from this origin only.
  async function keyRingFor(link) {
    const pasted = $("#keys-json").value.trim();
    if (pasted) {
      try {
        return { keyRing: JSON.parse(pasted) };
      } catch (error) {
        return { keyRingReason: `the pasted key ring is not JSON: ${error.message}` };
      }
    }
    let path = KEYS_PATH;
    if (link && typeof link.keys_url === "string") {
      try {
        const url = new URL(link.keys_url, location.href);
        if (url.origin === location.origin) path = url.pathname;
      } catch {
        // keep the documented path
      }
    }
    if (location.protocol === "file:") return { keyRingReason: `opened as a file, so ${KEYS_PATH} cannot be fetched: paste the key ring under “Keys”` };
    try {
      const answer = await fetchJson(path);
      if (answer.body && Array.isArray(answer.body.keys)) return { keyRing: answer.body };
      return { keyRingReason: `${path} has no key ring (HTTP ${answer.status}): paste it under “Keys”` };
    } catch (error) {
      return { keyRingReason: `could not load the key ring: ${error.message}` };
    }
  }

  function pastedReceipt() {
    const text = $("#receipt-json").value.trim();
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Unusable(`your commitment receipt is not JSON: ${error.message}`);
    }
  }

  // ?beacon_chain=URL: a drand chain trusted besides quicknet because the page's address asks for it, as
  // `pokna verify --beacon-chain` trusts one for a CLI user. Read once when the page opens, used by every check
  // on the page (a link, a paste, an upload); trusted only if it was fetched and read as a drand chain's /info.
  let addressChain = null; // { url, chain } once read, { url, problem } if it could not be used

  async function readAddressChain(given) {
    let url;
    try {
      url = new URL(given, location.href);
    } catch {
      return { url: given, problem: "that is not a URL" };
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") return { url: url.href, problem: "that is not an http(s) URL" };
    let response;
    try {
      const signal = AbortSignal.timeout(CHAIN_INFO_TIMEOUT_MS);
      response = await fetch(url.href, { headers: { Accept: "application/json" }, credentials: "omit", cache: "no-store", signal });
    } catch (error) {
      return {
        url: url.href,
        problem:
          `it could not be fetched (${error.message}); this page reads a chain's info over https, or over http from this ` +
          "machine (127.0.0.1, localhost), from a relay that lets other sites read it (Access-Control-Allow-Origin), as drand's relays do",
      };
    }
    if (!response.ok) return { url: url.href, problem: `it answered HTTP ${response.status}` };
    let info;
    try {
      info = await response.json();
    } catch (error) {
      return { url: url.href, problem: `it did not answer JSON (${error.message})` };
    }
    try {
      return { url: url.href, chain: chainFromDrandInfo(info) };
    } catch (error) {
      return { url: url.href, problem: `it is not a drand chain's info: ${error.message}` };
    }
  }

  // Beside the verdict, so nobody reads VALID without seeing which beacon it rests on.
  function renderAddressChain() {
    const node = $("#beacon-trust");
    node.hidden = addressChain === null;
    if (addressChain === null) return;
    const { url, chain, problem } = addressChain;
    node.dataset.state = chain ? "trusted" : "refused";
    if (chain) {
      node.dataset.chain = chain.chain_hash;
      node.replaceChildren(
        el("strong", {}, "Beacon chain also trusted (beacon_chain in this page's address): "),
        "chain ", mono(chain.chain_hash), ", key ", mono(`${chain.public_key.slice(0, 16)}…`), ", read from ", mono(url), ". ",
        "It is trusted because the address asked for it, not because this page knows it: whoever holds its key chooses its rounds, ",
        "so a game on it is only as fair as they are. Without beacon_chain this page trusts drand's quicknet only.",
      );
    } else {
      node.replaceChildren(
        el("strong", {}, "Beacon chain not trusted: "),
        "the address asks to trust the drand chain at ", mono(url), ` too (beacon_chain), but ${problem}. Only drand's quicknet is trusted.`,
      );
    }
  }

  async function verifyAndShow(value) {
    const keys = await keyRingFor(value && value.object === LINK_OBJECT ? value : null);
    const beaconChains = addressChain && addressChain.chain ? [addressChain.chain] : [];
    const report = await verifyDocument(value, { ...keys, receipt: pastedReceipt(), beaconChains });
    render(report);
    $("#load").open = false;
    return report;
  }

  async function guarded(work) {
    document.body.dataset.ready = "false";
    try {
      await work();
    } catch (error) {
      if (!(error instanceof Unusable)) console.error(error);
      showUnusable(error instanceof Unusable ? error : new Unusable(`the page failed: ${error.message}`));
    } finally {
      document.body.dataset.ready = "true";
    }
  }

  async function loadLink(value) {
    const path = linkPath(value);
    const answer = await fetchJson(path);
    if (answer.status === 404) {
      throw new Unusable(`no such proof link: ${path} is unknown here; check that the whole link was copied`, "NO SUCH PROOF LINK");
    }
    await verifyAndShow(answer.body);
  }

  function parsePasted(text, what) {
    if (!text.trim()) throw new Unusable(`the ${what} is empty`);
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Unusable(`the ${what} is not JSON: ${error.message}`);
    }
  }

  async function runCalculator() {
    const serverSeed = $("#calc-server-seed").value.trim();
    const clientSeed = $("#calc-client-seed").value.trim();
    const status = $("#calc-status");
    const body = $("#calc-results tbody");
    body.replaceChildren();
    if (!HEX64.test(serverSeed)) {
      status.textContent = "a server seed is 64 lowercase hexadecimal characters";
      status.dataset.state = "error";
      return;
    }
    const nonces = $("#calc-nonces").value.split(",").map((text) => text.trim()).filter(Boolean);
    for (const text of nonces) {
      if (!/^\d+$/.test(text)) {
        status.textContent = `nonce '${text}' is not a non-negative integer`;
        status.dataset.state = "error";
        return;
      }
      const computed = await computeRoll(serverSeed, clientSeed, text.replace(/^0+(?=\d)/, ""));
      body.append(
        el(
          "tr",
          { "data-nonce": text, "data-f": String(computed.f), "data-face": computed.face, "data-color": computed.color },
          el("td", { "data-label": "Nonce" }, text),
          el("td", { "data-label": "HMAC-SHA256" }, mono(computed.digest)),
          el("td", { "data-label": "f" }, mono(String(computed.f))),
          el("td", { "data-label": "Face" }, die(computed.face, computed.color)),
          el("td", { "data-label": "Colour" }, computed.color),
        ),
      );
    }
    status.textContent = `${nonces.length} roll${nonces.length === 1 ? "" : "s"}`;
    status.dataset.state = "done";
  }

  function wire() {
    $("#link-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const value = $("#link-input").value.trim();
      guarded(async () => {
        const path = linkPath(value);
        const query = new URLSearchParams({ proof: path.slice(LINK_PATH.length) });
        const asked = new URLSearchParams(location.search).get("beacon_chain");
        if (asked !== null) query.set("beacon_chain", asked); // the chain trusted stays named in the address
        history.replaceState(null, "", `?${query}`);
        await loadLink(path);
      });
    });
    $("#paste-button").addEventListener("click", () => guarded(() => verifyAndShow(parsePasted($("#proof-json").value, "pasted document"))));
    $("#proof-file").addEventListener("change", () => {
      const file = $("#proof-file").files[0];
      if (file) guarded(async () => verifyAndShow(parsePasted(await file.text(), `file ${file.name}`)));
    });
    $("#calc-button").addEventListener("click", runCalculator);
  }

  async function start() {
    wire();
    const params = new URLSearchParams(location.search);
    if (params.has("beacon_chain")) {
      addressChain = await readAddressChain(params.get("beacon_chain"));
      renderAddressChain();
    }
    if (params.has("server_seed")) {
      $("#calc-server-seed").value = params.get("server_seed");
      $("#calc-client-seed").value = params.get("client_seed") || "";
      $("#calc-nonces").value = params.get("nonces") || "0";
      $("#calculator").open = true;
      await runCalculator();
    }
    if (params.has("proof")) {
      $("#link-input").value = params.get("proof");
      await guarded(() => loadLink(params.get("proof")));
    } else {
      $("#load").open = true;
      document.body.dataset.ready = "true";
    }
  }

  window.PoknaVerifier = { verifyDocument, replayRules, computeRoll, canonicalize, Unusable };
  if (document.getElementById("verify-app")) start();
})();
