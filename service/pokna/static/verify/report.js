// The verdict and what was checked: the verdict box with its summary and problems (each linked to the row
// it blames), the list of checks, and the whole page drawn from one report of the core's verifyDocument.
import { isObject } from "../pokna-verify/index.js";
import { $, el, mono } from "./dom.js";
import {
  REASON,
  learnLabels,
  netResults,
  renderCommitment,
  renderFavor,
  renderMoney,
  renderRolls,
  renderSeats,
  renderSteps,
  sayGain,
  sayRake,
  seatLabels,
} from "./story.js";

// The checks and, beside them, the game's place in the public log once it was checked (judged apart; not
// logged yet, or not checkable here, is said under the verdict and fails nothing).
const allChecks = (report) => (report.publicLog && report.publicLog.status !== "not run" ? [...report.checks, report.publicLog] : report.checks);

function renderChecks(report) {
  const list = $("#checks");
  list.replaceChildren();
  for (const c of allChecks(report)) {
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
  public_log: "The game is in this table's public log, under a checkpoint signed by a published key",
};

// "game #N of this table's public log", said where the verdict is, or why it cannot be said yet.
function publicLogLine(result) {
  const attributes = { id: "public-log", "data-status": result.status };
  if (result.status === "pass") {
    return el("p", attributes, el("strong", {}, `Game #${result.gameNumber} of this table's public log`), `, proven in its checkpoint of ${result.treeSize} games, signed by a published key. Log: `, mono(result.origin));
  }
  if (result.status === "fail") return el("p", attributes, el("strong", {}, "Public log check FAILED: "), mono(result.message));
  return el("p", attributes, el("strong", {}, "Public log: "), result.message);
}

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
  if (report.publicLog) parts.push(publicLogLine(report.publicLog));
  $("#summary").replaceChildren(...parts);
  const problems = $("#verdict-problems");
  problems.replaceChildren();
  const failed = allChecks(report).filter((c) => c.status === "fail");
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

export function render(report) {
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

export function showUnusable(error) {
  clearStory();
  setVerdict({ state: "unusable", text: error.headline || "UNUSABLE", detail: error.message });
  $("#load").open = true;
}
