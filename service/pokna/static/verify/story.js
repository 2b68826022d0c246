// The game told as a story (sections 1-7 of the page): the commitment, the seats and their seeds, the favor,
// each action as the rules replay it, every roll, every transfer and each seat's result. It draws from the
// report of the core's verifyDocument (../pokna-verify/) and judges nothing itself.
import { VIGO, isBeaconProof, isInteger, isObject, rakeTermsOf } from "../pokna-verify/index.js";
import { $, cardTable, el, mono, signed } from "./dom.js";

export let seatLabels = new Map();
export function learnLabels(game) {
  const seats = isObject(game) && Array.isArray(game.seats) ? game.seats : [];
  seatLabels = new Map(seats.filter((seat) => isObject(seat) && typeof seat.label === "string").map((seat) => [seat.seat, seat.label]));
}
const labelled = (seat, plain) => (seatLabels.has(seat) ? (seat === VIGO ? `${seatLabels.get(seat)} (the Vigo)` : seatLabels.get(seat)) : plain);
export const seatName = (seat) => labelled(seat, seat === VIGO ? "the Vigo" : isInteger(seat) ? `Player ${seat}` : `seat ${seat}`);
export const SeatName = (seat) => labelled(seat, seat === VIGO ? "The Vigo" : seatName(seat));
const partyName = (party) => (party === "pot" ? "the pot" : party === "revenue" ? "the house (rake)" : seatName(party));

function listSeats(seats) {
  if (seats.length === 1) return seatName(seats[0]);
  if (seats.includes(VIGO) || seats.some((seat) => seatLabels.has(seat))) return `${seats.slice(0, -1).map(seatName).join(", ")} and ${seatName(seats[seats.length - 1])}`;
  return `Players ${seats.slice(0, -1).join(", ")} and ${seats[seats.length - 1]}`;
}

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

export const REASON = {
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

export const die = (face, color) =>
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

export function renderSteps(report) {
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


export function renderRolls(report) {
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

export function renderMoney(report) {
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

export function renderSeats(report, seeds, revealed) {
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

export function renderCommitment(report) {
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

export function renderFavor(report) {
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

export function netResults(proof) {
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
export function sayGain(row, stake) {
  const who = SeatName(row.seat);
  const paid = `paid in ${row.paid}, received ${row.received}`;
  if (row.net > 0) return `${who} gained ${row.net} (${paid}).`;
  if (row.net < 0) return `${who} lost ${-row.net} (${paid}).`;
  if (row.paid === 0) return `${who} neither paid nor received anything.`;
  if (row.paid === stake) return `${who} got their ante back (${paid}): net 0.`;
  return `${who} got back the ${row.paid} they paid in: net 0.`;
}

export function sayRake(game) {
  const { rake_bps: bps, rake_cap: cap } = rakeTermsOf(game);
  if (!bps) return "";
  return `, a rake of ${bps} basis points of each pot paid out${cap === null ? "" : ` (at most ${cap})`}`;
}
