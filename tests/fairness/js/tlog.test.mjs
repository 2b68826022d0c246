// The core's public-log checks (tlog.js) on vectors made by the Python implementation (pokna_verify.tlog):
// run by tests/fairness/test_fairness_js_tlog.py, which names the vectors' file in POKNA_TLOG_VECTORS.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { b64Decode, checkPublicLog, inclusionProblem, leafHash, openNote, parseCheckpoint, verifyDocument } from "pokna-verify";

const vectors = JSON.parse(readFileSync(process.env.POKNA_TLOG_VECTORS, "utf8"));
const encoder = new TextEncoder();
const flipped = (b64) => {
  const bytes = b64Decode(b64);
  bytes[0] ^= 1;
  return bytes;
};

test("every inclusion path Python made leads to its root, and no changed one does", async () => {
  let checked = 0;
  for (const tree of vectors.trees) {
    const root = b64Decode(tree.root);
    const size = tree.entries.length;
    for (const [index, path] of tree.paths.entries()) {
      const leaf = await leafHash(encoder.encode(tree.entries[index]));
      const hashes = path.map(b64Decode);
      assert.equal(await inclusionProblem(leaf, index, size, hashes, root), null, `size ${size} leaf ${index}`);
      for (let i = 0; i < hashes.length; i++) {
        const changed = hashes.map((hash, j) => (j === i ? flipped(path[j]) : hash));
        assert.notEqual(await inclusionProblem(leaf, index, size, changed, root), null, `size ${size} leaf ${index} hash ${i}`);
      }
      const otherLeaf = await leafHash(encoder.encode(tree.entries[index] + "!"));
      assert.notEqual(await inclusionProblem(otherLeaf, index, size, hashes, root), null);
      if (hashes.length) assert.notEqual(await inclusionProblem(leaf, index, size, hashes.slice(1), root), null);
      checked++;
    }
  }
  assert.equal(checked, 91);
});

test("a checkpoint Python signed opens with the key ring, under its origin only", async () => {
  const note = vectors.link.public_log.checkpoint;
  const keys = vectors.key_ring.keys.map((key) => Uint8Array.from(atob(key.public_key.replace(/-/g, "+").replace(/_/g, "/") + "="), (c) => c.charCodeAt(0)));
  const text = await openNote(note, vectors.origin, keys);
  assert.deepEqual(parseCheckpoint(text).size, 6);
  await assert.rejects(openNote(note, "another.origin/games/x", keys), /no signature/);
  await assert.rejects(openNote(note.replace("\n6\n", "\n7\n"), vectors.origin, keys), /invalid signature/);
  await assert.rejects(openNote(vectors.stranger_place.checkpoint, vectors.origin, keys), /no signature/);
});

test("the link's place in the log: game #4 of the origin's log", async () => {
  const report = await verifyDocument(vectors.link, { keyRing: vectors.key_ring });
  assert.equal(report.verdict.state, "valid", JSON.stringify(report.checks));
  assert.equal(report.publicLog.status, "pass", report.publicLog.message);
  assert.equal(report.publicLog.gameNumber, 4);
  assert.equal(report.publicLog.message, `game #4 of ${vectors.origin}'s public log, proven in its signed checkpoint of 6 games`);
});

test("pending fails nothing; no key ring checks the path only", async () => {
  const pending = await verifyDocument({ ...vectors.link, public_log: { status: "pending", log_url: "/v1/logs/x" } }, { keyRing: vectors.key_ring });
  assert.equal(pending.verdict.state, "valid");
  assert.equal(pending.publicLog.status, "not run");
  assert.match(pending.publicLog.message, /^not logged yet/);
  const unkeyed = await checkPublicLog(vectors.link.proof, vectors.link.public_log, null);
  assert.equal(unkeyed.status, "not run");
});

test("a place whose status is neither pending nor logged is malformed and fails, as pokna-verify proof says", async () => {
  // The service writes only these two; the rest of this place still proves game #4, so the status is all that is wrong.
  for (const status of ["bogus", undefined, null]) {
    const report = await verifyDocument({ ...vectors.link, public_log: { ...vectors.link.public_log, status } }, { keyRing: vectors.key_ring });
    assert.equal(report.publicLog.status, "fail", `${status}: ${report.publicLog.message}`);
    assert.match(report.publicLog.message, /^the link's public_log is malformed: its status is /);
    assert.equal(report.verdict.state, "invalid");
  }
});

test("a changed path hash, a stranger's checkpoint or another proof's leaf fails the verification", async () => {
  const place = vectors.link.public_log;
  const changedPath = { ...place, inclusion_path: [btoa(String.fromCharCode(...flipped(place.inclusion_path[0]))), ...place.inclusion_path.slice(1)] };
  for (const [given, words] of [
    [changedPath, /^the log's inclusion proof fails/],
    [vectors.stranger_place, /^the checkpoint the link carries is not signed/],
    [vectors.other_proof_place, /logged another proof for game/],
  ]) {
    const report = await verifyDocument({ ...vectors.link, public_log: given }, { keyRing: vectors.key_ring });
    assert.equal(report.publicLog.status, "fail");
    assert.match(report.publicLog.message, words);
    assert.equal(report.verdict.state, "invalid");
    assert.match(report.verdict.detail, /public_log/);
  }
});

test("a checkpoint of more games than a Number counts exactly is refused, not rounded", async () => {
  const huge = vectors.huge;
  assert.throws(() => parseCheckpoint(huge.checkpoint), /more games than this verifier counts exactly/);
  // What the rounding did: the path of a tree of 2**53 leaves passed for the signed 2**53 + 1.
  const leaf = await leafHash(encoder.encode(huge.entry));
  const root = b64Decode(huge.checkpoint.split("\n")[2]);
  assert.equal(await inclusionProblem(leaf, 0, 2 ** 53, huge.path.map(b64Decode), root), null);
});
