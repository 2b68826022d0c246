// One whole game played through a client generated from openapi/openapi.json by openapi-typescript and
// called with openapi-fetch, as an outside TypeScript team would: nothing here is hand-typed that the
// document types. tests/test_typescript_client.py type-checks it with `tsc --strict` and runs it against a
// real `pokna serve`; the type assertions below fail the compilation if the document loses precision.
import createClient from "openapi-fetch";
import type { components, paths, webhooks } from "./schema.js";

type Schemas = components["schemas"];
type Game = Schemas["GameOut"];
type Action = NonNullable<paths["/v1/games/{game_id}/actions"]["post"]["requestBody"]>["content"]["application/json"];
type Proof = Schemas["SignedProofOut"];
type Link = Schemas["FairnessLinkOut"];
type WebhookEvent = Schemas["WebhookEvent"];
type ProtocolName = "pokna-hmac-sha256-v1" | "pokna-hmac-sha256-drand-v1";

// Compile-time checks on what the generator made of the document.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | undefined {
  return undefined;
}
type DepositAnswers = paths["/v1/accounts/{account_id}/deposits"]["post"]["responses"];
type WithdrawAnswers = paths["/v1/accounts/{account_id}/withdrawals"]["post"]["responses"];
assertType<Equal<keyof DepositAnswers[201]["headers"] & "Idempotent-Replayed", "Idempotent-Replayed">>();
assertType<"insufficient_funds" extends WithdrawAnswers[409]["content"]["application/problem+json"]["code"] ? true : false>();
assertType<string extends WithdrawAnswers[409]["content"]["application/problem+json"]["code"] ? false : true>();
assertType<Equal<Schemas["TurnOut"]["allowed_actions"], Schemas["GameTurnData"]["allowed_actions"]>>();
assertType<Equal<Schemas["TurnOut"]["default_action"], Schemas["GameTurnData"]["default_action"]>>();
assertType<Equal<Schemas["OutcomeOut"]["reason"], Schemas["GameEndedData"]["reason"]>>();
assertType<Equal<Proof["rolls"][number]["color"], "red" | "blue">>();
assertType<Equal<WebhookEvent["type"], keyof webhooks>>();
assertType<Equal<Proof["protocol"], ProtocolName>>();
assertType<Equal<Schemas["CommitmentReceiptOut"]["protocol"], ProtocolName>>();
assertType<Equal<Game["fairness"]["protocol"], ProtocolName>>();
// A game's proof answer: the signed proof, or the pending answer (the only one with `revealed`, false).
type ProofAnswer = paths["/v1/games/{game_id}/proof"]["get"]["responses"][200]["content"]["application/json"];
assertType<Equal<ProofAnswer, Proof | Schemas["ProofPendingOut"]>>();
assertType<Equal<Exclude<ProofAnswer, Proof>["revealed"], false>>();
assertType<Equal<Link["revealed"], boolean>>();
assertType<Equal<Extract<Link, { revealed: true }>["proof"], Proof>>();
// Optional only so that openapi-fetch's Readable<> (which drops a property typed only `null`) keeps the answer
// assignable to the schema; the service always sends it, as null.
assertType<Equal<Extract<Link, { revealed: false }>["proof"], null | undefined>>();

/** An exhaustive `switch` over webhook events: adding an event type to the document breaks this build. */
export function describe(event: WebhookEvent): string {
  switch (event.type) {
    case "game.created":
      return `game ${event.data.game_id} created at table ${event.data.table_id ?? "none"}`;
    case "game.started":
      return `game ${event.data.game_id} started, pot ${event.data.pot}`;
    case "game.turn":
      return `game ${event.data.game_id}: ${event.data.allowed_actions.join("/")} by ${event.data.account_ids.join(", ")}`;
    case "game.turn_timed_out":
      return `game ${event.data.game_id}: timed out`;
    case "game.settled":
      return `game ${event.data.game_id} settled: ${event.data.reason}`;
    case "game.cancelled":
      return `game ${event.data.game_id} cancelled: ${event.data.reason}`;
    case "ledger.deposit.posted":
      return `deposit ${event.data.amount} to ${event.data.account_id}`;
    case "ledger.withdrawal.posted":
      return `withdrawal ${event.data.amount} from ${event.data.account_id} (${event.data.reference})`;
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}

const base = process.env.POKNA_BASE_URL;
const apiKey = process.env.POKNA_API_KEY;
if (!base || !apiKey) throw new Error("POKNA_BASE_URL and POKNA_API_KEY are required");

const client = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${apiKey}` } });
const publicClient = createClient<paths>({ baseUrl: base });
let keys = 0;
const idempotencyKey = (): string => `ts-${process.pid}-${++keys}`;

async function openWallet(externalId: string, amount: number): Promise<string> {
  const opened = await client.POST("/v1/accounts", {
    params: { header: { "Idempotency-Key": idempotencyKey() } },
    body: { external_id: externalId, currency: "CREDIT" },
  });
  if (opened.error) throw new Error(`open wallet: ${opened.error.code}: ${opened.error.detail}`);
  const deposited = await client.POST("/v1/accounts/{account_id}/deposits", {
    params: { path: { account_id: opened.data.id }, header: { "Idempotency-Key": idempotencyKey() } },
    body: { amount },
  });
  if (deposited.error) throw new Error(`deposit: ${deposited.error.code}: ${deposited.error.detail}`);
  if (deposited.response.headers.get("Idempotent-Replayed") !== null) throw new Error("a first deposit replayed");
  return opened.data.id;
}

async function act(game: Game, action: Action): Promise<Game> {
  const answer = await client.POST("/v1/games/{game_id}/actions", {
    params: { path: { game_id: game.id }, header: { "Idempotency-Key": idempotencyKey() } },
    body: { ...action, expected_version: game.version },
  });
  if (answer.error) {
    const problem = answer.error;
    throw new Error(`${action.type}: ${problem.status} ${problem.code}: ${problem.detail}`);
  }
  for (const roll of answer.data.rolls) {
    console.log(`  roll ${roll.nonce}: seat ${roll.seat} ${roll.purpose} ${roll.face} (${roll.color})`);
  }
  return answer.data;
}

function nextAction(game: Game): Action {
  const turn = game.turn;
  const who = turn?.account_ids[0];
  if (!turn || !who) throw new Error(`game ${game.id} is ${game.status} with no turn`);
  const allowed = new Set(turn.allowed_actions);
  if (allowed.has("start")) return { type: "start", account_id: who };
  if (allowed.has("vote")) return { type: "vote", account_id: who, choice: "split" };
  if (allowed.has("claim")) return { type: "claim", account_id: who };
  if (allowed.has("roll")) return { type: "roll", account_id: who };
  throw new Error(`no action to take among ${turn.allowed_actions.join(", ")}`);
}

const wallets = [await openWallet("ts-vigo", 20), await openWallet("ts-ana", 20), await openWallet("ts-ben", 20)];
const [vigo, ...players] = wallets as [string, ...string[]];
const created = await client.POST("/v1/games", {
  params: { header: { "Idempotency-Key": idempotencyKey() } },
  body: { vigo_account_id: vigo, player_account_ids: players, stake: 2, currency: "CREDIT", turn_timeout_seconds: 600 },
});
if (created.error) throw new Error(`create game: ${created.error.code}: ${created.error.detail}`);
let game: Game = created.data;
console.log(`game ${game.id}: commitment ${game.fairness.commitment.server_seed_hash}`);
for (const seat of game.seats) {
  game = await act(game, { type: "set_client_seed", account_id: seat.account_id, client_seed: `ts-seat-${seat.seat}` });
}
for (let steps = 0; game.status === "open" || game.status === "in_progress"; steps++) {
  if (steps > 100) throw new Error("the game did not end within 100 actions");
  const action = nextAction(game);
  console.log(`${game.phase}: ${action.type} by ${"account_id" in action ? action.account_id : "nobody"}`);
  game = await act(game, action);
}
const outcome = game.outcome;
if (!outcome) throw new Error("an ended game without an outcome");
console.log(`${game.status}: ${outcome.reason}, ${outcome.payouts.map((p) => `seat ${p.seat} +${p.amount}`).join(", ")}`);

const proofAnswer = await client.GET("/v1/games/{game_id}/proof", { params: { path: { game_id: game.id } } });
if (proofAnswer.error) throw new Error(`proof: ${proofAnswer.error.code}`);
const proofOrPending = proofAnswer.data;
// Told apart by `document`, which only the signed proof has (the proof has no `revealed` member).
if (!("document" in proofOrPending)) throw new Error(`an ended game whose proof is ${proofOrPending.status}`);
const proof: Proof = proofOrPending;
if (proof.game.stake !== 2 || proof.game.seats.length !== wallets.length) throw new Error("the proof signs other terms");
if (proof.rolls.some((roll) => roll.face < 1 || roll.face > 6)) throw new Error("a roll off the cube");
const protocol: ProtocolName = proof.protocol;
if (protocol !== game.fairness.protocol) throw new Error(`the proof's protocol is ${protocol}, the game's another`);

const token = game.fairness.public_url?.split("/").pop();
if (!token) throw new Error("no public fairness link");
const linkAnswer = await publicClient.GET("/v1/fairness/proofs/{token}", { params: { path: { token } } });
if (linkAnswer.error) throw new Error(`link: ${linkAnswer.error.code}`);
// Stored by the schema's own type, as a client keeping links would: no cast.
const link: Link = linkAnswer.data;
if (!link.revealed) throw new Error("the link of an ended game does not reveal its proof");
if (link.proof.server_seed !== proof.server_seed) throw new Error("the link and the proof disagree");
if (link.commitment.server_seed_hash !== proof.server_seed_hash) throw new Error("the commitment changed");

const withdrawal = await client.POST("/v1/accounts/{account_id}/withdrawals", {
  params: { path: { account_id: vigo }, header: { "Idempotency-Key": idempotencyKey() } },
  body: { amount: 1_000_000 },
});
if (!withdrawal.error) throw new Error("a withdrawal beyond the balance went through");
if (withdrawal.error.code !== "insufficient_funds") throw new Error(`withdrawal: ${withdrawal.error.code}`);
console.log(`played: ${proof.rolls.length} rolls, ${proof.actions.length} actions, ${proof.transfers.length} transfers`);
