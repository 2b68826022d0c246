// The published test vectors of docs/fairness.md, read from the doc itself and recomputed by the checking core
// as an integrator imports it (`pokna-verify`), under Node: no browser, no network.
// Run by tests/fairness/test_fairness_js_core.py, which names the doc and the quicknet rounds fixture in
// POKNA_FAIRNESS_DOC and POKNA_QUICKNET_ROUNDS.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  QUICKNET,
  chainFromDrandInfo,
  colorOf,
  computeBeaconRoll,
  computeRoll,
  gameClientSeed,
  roundProblem,
  serverSeedHash,
} from "pokna-verify";

const doc = readFileSync(process.env.POKNA_FAIRNESS_DOC, "utf8");
const fixture = JSON.parse(readFileSync(process.env.POKNA_QUICKNET_ROUNDS, "utf8"));
const realRound = (number) => fixture.rounds.find((round) => round.round === number);

function found(pattern, what) {
  const match = doc.match(pattern);
  assert.ok(match, `docs/fairness.md no longer says ${what}`);
  return match;
}

// The section from `heading` up to the next heading of the same level.
function section(heading) {
  const start = doc.indexOf(`\n${heading}`);
  assert.ok(start >= 0, `docs/fairness.md has no section ${heading}`);
  const level = heading.split(" ")[0];
  const end = doc.indexOf(`\n${level} `, start + heading.length + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

// The rows of the table whose header starts with `header`: every row must be read, none skipped.
function tableRows(text, header, row) {
  const lines = text.split("\n");
  const first = lines.findIndex((line) => line.startsWith(header));
  assert.ok(first >= 0, `no table headed ${header}`);
  const rows = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith("|")) break;
    const match = line.match(row);
    assert.ok(match, `a row of the table headed ${header} does not read as a vector: ${line}`);
    rows.push(match);
  }
  return rows;
}

const checkSeed = found(/The full check-vector seed is `([0-9a-f]{64})`/, "the check-vector seed")[1];
const [, seedBPhrase, seedB] = found(/Seed B is `sha256_hex\("([^"]+)"\)` =\s*`([0-9a-f]{64})`/, "seed B");
const [, ...seatsAndSeedB] = found(
  /Game client seed B is the game client\s+seed of the seats `([^`]+)`, `([^`]+)`, `([^`]+)` =\s*`([0-9a-f]{64})`/,
  "client seed B",
);
const clientSeedB = seatsAndSeedB[3];
const SERVER_SEEDS = { "`5d5c1ae0…4a59` (check vector)": checkSeed, "`5d5c1ae0…4a59`": checkSeed, "seed B": seedB };
const CLIENT_SEEDS = { "`pokna-client`": "pokna-client", "client seed B": clientSeedB };
const seedNamed = (table, name) => {
  assert.ok(name in table, `the doc names a seed ${name} this test does not know`);
  return table[name];
};

test("the check vector of section 1: its commitment and its first roll", async () => {
  const [, seed, clientSeed, nonce, f, face, colour, hash] = found(
    /\*\*Check vector\.\*\* Server seed `([0-9a-f]{64})`, game client\s+seed `([^`]+)`, nonce (\d+) → f = ([0-9.]+), face (\d), (red|blue)\. Its `server_seed_hash` is\s+`([0-9a-f]{64})`/,
    "the check vector",
  );
  assert.equal(seed, checkSeed);
  assert.equal(await serverSeedHash(seed), hash);
  const roll = await computeRoll(seed, clientSeed, Number(nonce));
  assert.deepEqual([String(roll.f), roll.face, roll.color], [f, Number(face), colour]);
});

test("seed B and game client seed B are what section 4 says they are made of", async () => {
  assert.equal(await serverSeedHash(seedBPhrase), seedB); // sha256 of the phrase as text, as of any seed
  assert.equal(await gameClientSeed(seatsAndSeedB.slice(0, 3)), clientSeedB);
});

test("every vector of section 4 (pokna-hmac-sha256-v1)", async () => {
  const rows = tableRows(
    section("## 4. Test vectors"),
    "| Server seed | Game client seed | Nonce | f | Face | Colour |",
    /^\| (.+?) \| (.+?) \| (\d+) \| ([0-9.]+) \| (\d) \| (red|blue) \|$/,
  );
  assert.ok(rows.length >= 15, `only ${rows.length} vectors read`);
  for (const [line, server, client, nonce, f, face, colour] of rows) {
    const roll = await computeRoll(seedNamed(SERVER_SEEDS, server), seedNamed(CLIENT_SEEDS, client), Number(nonce));
    assert.deepEqual([String(roll.f), roll.face, roll.color], [f, Number(face), colour], line);
    assert.equal(colorOf(roll.face), colour);
  }
});

test("every vector of section 1b (the beacon mode), with the rounds' randomness the doc publishes", async () => {
  const text = section("## 1b. The beacon fairness mode: protocol `pokna-hmac-sha256-drand-v1`");
  const [, first, firstRandomness, second, secondRandomness] = found(
    /round (\d+)'s randomness is\s+`([0-9a-f]{64})`, round (\d+)'s\s+`([0-9a-f]{64})`/,
    "the vectors' rounds",
  );
  const randomness = { [first]: firstRandomness, [second]: secondRandomness };
  const rows = tableRows(
    text,
    "| Server seed | Game client seed | Round | Nonce | f | Face |",
    /^\| (.+?) \| (.+?) \| (\d+) \| (\d+) \| ([0-9.]+) \| (\d) \|$/,
  );
  assert.ok(rows.length >= 4, `only ${rows.length} beacon vectors read`);
  for (const [line, server, client, round, nonce, f, face] of rows) {
    assert.ok(round in randomness, `round ${round} has no published randomness`);
    const roll = await computeBeaconRoll(seedNamed(SERVER_SEEDS, server), seedNamed(CLIENT_SEEDS, client), Number(nonce), randomness[round]);
    assert.deepEqual([String(roll.f), roll.face], [f, Number(face)], line);
  }
});

test("the rounds the doc names are real quicknet rounds: BLS verifies under Node, randomness = sha256(signature)", async () => {
  const [, first, firstRandomness, second, secondRandomness] = found(
    /round (\d+)'s randomness is\s+`([0-9a-f]{64})`, round (\d+)'s\s+`([0-9a-f]{64})`/,
    "the vectors' rounds",
  );
  for (const [number, randomness] of [[first, firstRandomness], [second, secondRandomness]]) {
    const round = realRound(Number(number));
    assert.equal(round.randomness, randomness);
    assert.equal(await roundProblem(QUICKNET, round), null);
  }
  const moved = { ...realRound(Number(second)), round: Number(second) + 1 };
  assert.equal(await roundProblem(QUICKNET, moved), `the BLS signature does not verify for round ${moved.round} under the chain's public key`);
});

test("the pinned chain is quicknet as the doc and drand's /info describe it", () => {
  assert.deepEqual(chainFromDrandInfo(fixture.info), QUICKNET);
  const table = section("## 1b. The beacon fairness mode: protocol `pokna-hmac-sha256-drand-v1`");
  assert.ok(table.includes(`| scheme | \`${QUICKNET.scheme}\``));
  assert.ok(table.includes(`| chain hash | \`${QUICKNET.chain_hash}\` |`));
  assert.ok(table.includes(`| public key | \`${QUICKNET.public_key}\` |`));
  assert.ok(table.includes(`| genesis | \`${QUICKNET.genesis_time}\``));
  assert.ok(table.includes(`| period | ${QUICKNET.period} s |`));
});
