// What was given: a public link document (GET /v1/fairness/proofs/{token}) or a bare proof, and whether a
// proof has every field of the right type (pokna_verify.fairness.json_reader): the first missing or mistyped
// field, by its JSON path, makes it INVALID; something that is no proof at all is UNUSABLE.
import { isInteger, isObject } from "./json.js";

export const PROOF_DOCUMENT = "proof";
export const RECEIPT_DOCUMENT = "commitment_receipt";
export const LINK_OBJECT = "fairness_link";

// The input cannot be checked at all (not JSON, not a proof, no such link): the verdict is UNUSABLE.
export class Unusable extends Error {
  constructor(message, headline = "UNUSABLE") {
    super(message);
    this.headline = headline;
  }
}

// A proof with a missing or mistyped field: the operator's document is broken, so the verdict is INVALID.
export class MalformedProof extends Error {}

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
export function checkShape(proof) {
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

// What was given: a public link document (GET /v1/fairness/proofs/{token}) or a bare proof.
export function readDocument(value) {
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
