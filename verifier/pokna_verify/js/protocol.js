// The roll of pokna-hmac-sha256-v1 and its beacon mode (docs/fairness.md, sections 1 and 1b), as
// pokna_verify.fairness.protocol computes it: what a seed, a client seed and a roll are.
import { hmacSha256, sha256Hex, toHex } from "./crypto.js";

export const PROTOCOL = "pokna-hmac-sha256-v1";
// The beacon fairness mode (docs/fairness.md, section 1b): rolls also depend on a drand round.
export const BEACON_PROTOCOL = "pokna-hmac-sha256-drand-v1";

export const HEX64 = /^[0-9a-f]{64}$/;
export const CLIENT_SEED = /^[A-Za-z0-9._~-]{1,64}$/;

export const PURPOSES = ["favor", "seek", "challenge_favor", "challenge"];
export const SOURCES = ["player", "server"];

export const colorOf = (face) => (face <= 3 ? "red" : "blue");

// The commitment: SHA-256 of the seed's 64 hex characters as text (not of the 32 bytes they spell).
export const serverSeedHash = (serverSeed) => sha256Hex(serverSeed);

// The game client seed: SHA-256 of the seats' client seeds in seat order, joined by newlines.
export const gameClientSeed = (seedsInSeatOrder) => sha256Hex(seedsInSeatOrder.join("\n"));

// One roll of pokna-hmac-sha256-v1 (Stake's byte generator, cursor 0). u32 * 6 < 2**35 is exact in a double.
export async function computeRoll(serverSeed, gameClientSeed, nonce) {
  const digest = await hmacSha256(serverSeed, `${gameClientSeed}:${nonce}:0`);
  const u32 = ((digest[0] << 24) >>> 0) + (digest[1] << 16) + (digest[2] << 8) + digest[3];
  const face = Math.floor((u32 * 6) / 2 ** 32) + 1;
  return { digest: toHex(digest), f: u32 / 2 ** 32, face, color: colorOf(face) };
}

// A beacon-mode roll: the same generator with the round's randomness in the client seed,
// HMAC-SHA256(server_seed, `${client_seed}:${randomness}:${nonce}:0`).
export const computeBeaconRoll = (serverSeed, gameClientSeed, nonce, randomness) => computeRoll(serverSeed, `${gameClientSeed}:${randomness}`, nonce);
