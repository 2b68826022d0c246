// The rules of Vigo's Favor, a second implementation of docs/rules.md in JavaScript (not a copy of the Python
// engine, pokna_verify.game): the table that the rules replay (replay.js) drives.
//
// A table replays the proof's `actions` one by one. Each action gets the seat balances recorded with it,
// draws its rolls from the proof by nonce (the recorded face, so a mis-recorded face is the `rolls` check's
// business) and produces events and transfers. A refused action ends the replay: the service records only
// actions the rules applied.
import { isInteger } from "./json.js";
import { colorOf } from "./protocol.js";

export const MIN_PLAYERS = 1;
export const MAX_PLAYERS = 11;
export const VIGO = 0;

export class Refused extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}

export class RollMissing extends Error {
  constructor(nonce) {
    super(`the rules draw roll nonce ${nonce}, which the proof does not have`);
    this.nonce = nonce;
  }
}

// A signed document's rake terms, absent ones as no rake (pokna_verify.fairness.terms.rake_terms_of).
export const rakeTermsOf = (game) => ({ rake_bps: game.rake_bps ?? 0, rake_cap: game.rake_cap ?? null });

export class Table {
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
