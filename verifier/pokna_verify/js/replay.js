// The rules replay (the `replay` check): the proof's actions run over its recorded rolls from a new table
// with the proof's terms (rules.js), and every roll's seat and purpose, every transfer and the outcome compared
// with what the proof records, in the order pokna_verify.fairness.proof_replay compares them.
import { check } from "./check-result.js";
import { canonicalize, isInteger, isObject } from "./json.js";
import { MAX_PLAYERS, MIN_PLAYERS, Refused, RollMissing, Table, rakeTermsOf } from "./rules.js";

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
export function replayRules(proof) {
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

export function checkReplay(proof, replay) {
  if (replay.problem) return check("replay", [replay.problem.message]);
  return check(
    "replay",
    [],
    `the rules replay ${proof.actions.length} actions over ${proof.rolls.length} rolls and reproduce all ${proof.transfers.length} transfers and the outcome`,
  );
}
