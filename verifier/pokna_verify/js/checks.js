// The checks of the seeds and the rolls (pokna_verify.fairness.verification): the commitment, the client
// seeds, the seats, the nonces and every roll recomputed. Each returns one check's result.
import { check } from "./check-result.js";
import { isBeaconProof } from "./beacon.js";
import { isInteger, isObject } from "./json.js";
import { CLIENT_SEED, HEX64, PURPOSES, SOURCES, computeBeaconRoll, computeRoll, gameClientSeed, serverSeedHash } from "./protocol.js";

export async function checkCommitment(proof) {
  if (!HEX64.test(proof.server_seed)) return check("commitment", ["server_seed is not 64 lowercase hexadecimal characters"]);
  const computed = await serverSeedHash(proof.server_seed);
  if (computed !== proof.server_seed_hash) {
    return check("commitment", [`sha256(server_seed) is ${computed}, server_seed_hash is ${proof.server_seed_hash}`]);
  }
  return check("commitment", [], `sha256(server_seed) = server_seed_hash = ${computed}`);
}

export function checkClientSeedFormat(proof) {
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

export async function checkClientSeed(proof) {
  const ordered = [...proof.client_seeds].sort((a, b) => a.seat - b.seat);
  const computed = await gameClientSeed(ordered.map((entry) => entry.client_seed));
  if (computed !== proof.client_seed) {
    return check("client_seed", [`sha256 of the seats' client seeds is ${computed}, client_seed is ${proof.client_seed}`]);
  }
  return check("client_seed", [], `client_seed = sha256 of the seats' client seeds = ${computed}`);
}

// Also marks the rows it blames (marks.rolls by nonce, marks.transfers by index) for the story.
export function checkSeats(proof, marks) {
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

export function checkNonces(proof, marks) {
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
export async function checkRolls(proof, rows) {
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
