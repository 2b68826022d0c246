"""The verifier page's rules replay (JavaScript, written from docs/rules.md) against the Python engine.

1,000 random games are played through `pokna_verify.game` with real protocol rolls, published as public link
documents, and checked in one page load: each must be VALID in the page, and the page's replay must reach
the engine's transfers and outcome exactly. Then every single-field change to a few of those proofs is
checked by the page and by `pokna_verify.fairness.verification.verify_proof`: both must fail the same checks.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fairness_samples import KEY_RING, NEW_KEY, OLD_KEY, altered, get_at, leaf_paths, with_leaf

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.errors import MalformedProofError
from pokna_verify.fairness.proof import RecordedRoll, RollPurpose, SeatClientSeed, TransferRecord, build_proof
from pokna_verify.fairness.proof_replay import balance_cap, outcome_to_json, recorded_balances, replay_proof
from pokna_verify.fairness.protocol import game_client_seed, roll, server_seed_hash
from pokna_verify.fairness.receipt import build_commitment_receipt
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from pokna_verify.fairness.verification import verify_proof
from pokna_verify.game import (
    REVENUE,
    Action,
    Cancel,
    CannotPay,
    Challenge,
    ChallengeUnaffordable,
    Claim,
    GameConfig,
    Phase,
    Roll,
    Start,
    Timeout,
    TransferKind,
    Vote,
    VoteChoice,
    action_to_dict,
    new_game,
    step,
    turn,
)
from pokna_verify.game.events import Raked, Rolled, Settled, TimedOut, VigoBust, VoteDecided
from pokna_verify.game.transfers import party_to_json
from support.browser import Browser, Site, browser_session, serving

pytestmark = pytest.mark.xdist_group("browser")

GAMES = 1000
SEED_ALPHABET = string.ascii_letters + string.digits + "._~-"
MAX_ACTIONS = 600

# What the random games must have covered, at least this often each.
REQUIRED_KINDS = {
    **{f"players:{count}": 60 for count in range(1, 12)},
    "outcome:no_survivors": 20,
    "outcome:claimed": 20,
    "outcome:challenge_won": 20,
    "outcome:challenge_lost": 20,
    "outcome:split": 20,
    "outcome:vigo_bust": 20,
    "outcome:cancelled": 20,
    "split:remainder": 5,
    "roll_again": 20,
    "roll_again:chain": 5,
    "vigo_bust:survivors_split": 10,
    "vigo_bust:lone_survivor": 5,
    "refused:cannot_pay": 10,
    "refused:challenge_unaffordable": 10,
    "timeout:open": 5,
    "timeout:seeking": 20,
    "timeout:voting": 5,
    "timeout:lone_survivor": 5,
    "timeout:challenge_favor": 3,
    "timeout:challenge_roll": 3,
    "cancel": 5,
    "seed:server": 50,
    "key:retired": 50,
    "rake": 200,
    "rake:capped": 30,
    "rake:split": 30,
}

# Rake terms drawn from a random generator of their own, so the games above stay the ones they were.
RAKE_TERMS = ((0, None), (500, None), (500, 1), (250, 3), (1_000, 7), (9_999, None), (10_000, None), (1, 2))


@dataclass(frozen=True)
class PlayedGame:
    link: dict[str, Any]
    transfers: list[dict[str, Any]]
    outcome: dict[str, Any]
    kinds: frozenset[str]

    @property
    def proof(self) -> dict[str, Any]:
        proof: dict[str, Any] = self.link["proof"]
        return proof


def _balances(rng: random.Random, config: GameConfig) -> dict[int, int]:
    """Mostly enough for anything; sometimes too little to ante, to match a raise or to pay for survivors."""
    stake, challenge_raise, players = config.stake, config.challenge_raise, config.player_count
    balances = {}
    for seat in config.players:
        short = rng.random() < 0.2
        balances[seat] = (
            stake + rng.randrange(challenge_raise)
            if short
            else stake * rng.randrange(2, 50) + 2 * challenge_raise
        )
    if rng.random() < 0.08:
        balances[rng.choice(config.players)] = rng.randrange(stake)
    low = (0, stake, 2 * stake, stake * players, challenge_raise - 1, 3 * stake + challenge_raise)
    balances[0] = rng.choice(low) if rng.random() < 0.4 else rng.randrange(10, 60) * stake * max(players, 2)
    return balances


def _client_seeds(rng: random.Random, accounts: dict[int, str]) -> list[SeatClientSeed]:
    seeds = []
    for seat, account in accounts.items():
        text = "".join(rng.choice(SEED_ALPHABET) for _ in range(rng.randrange(1, 65)))
        seeds.append(SeatClientSeed(seat, account, text, "server" if rng.random() < 0.2 else "player"))
    return seeds


def _decide(state: Any, rng: random.Random, roll_again: float) -> Action:
    patience = (
        0.25 if state.phase in (Phase.LONE_SURVIVOR, Phase.CHALLENGE_FAVOR, Phase.CHALLENGE_ROLL) else 0.05
    )
    if rng.random() < patience:
        return Timeout()
    now = turn(state)
    if state.phase is Phase.OPEN:
        return Cancel() if rng.random() < 0.04 else Start(0)
    if state.phase is Phase.VOTING:
        choice = VoteChoice.ROLL_AGAIN if rng.random() < roll_again else VoteChoice.SPLIT
        return Vote(rng.choice(now.seats), choice)
    if state.phase is Phase.LONE_SURVIVOR:
        return Challenge(now.seats[0]) if rng.random() < 0.55 else Claim(now.seats[0])
    return Roll(now.seats[0])


def play_random_game(index: int) -> PlayedGame:
    """One game through the engine, as the service would play and publish it (deterministic per index)."""
    rng = random.Random(f"pokna-browser-game-{index}")
    players = index % 11 + 1
    stake = rng.choice((1, 2, 5, 10, 25, 100))
    challenge_raise = rng.choice((stake, stake, 1, 2 * stake, 3 * stake + 1))
    rake_bps, rake_cap = random.Random(f"pokna-browser-rake-{index}").choice(RAKE_TERMS)
    config = GameConfig.create(
        stake=stake,
        challenge_raise=challenge_raise,
        player_count=players,
        rake_bps=rake_bps,
        rake_cap=rake_cap,
    )
    accounts = {seat: f"acct_{index:04d}_{seat}" for seat in config.seats}
    balances = _balances(rng, config)
    cap = balance_cap(stake, challenge_raise, players)
    server_seed = f"{rng.getrandbits(256):064x}"
    seeds = _client_seeds(rng, accounts)
    client_seed = game_client_seed([entry.client_seed for entry in seeds])
    roll_again = rng.choice((0.0, 0.3, 0.6, 0.95))
    kinds = {f"players:{players}"}
    kinds |= {"seed:server"} if any(entry.source == "server" for entry in seeds) else set()

    state = new_game(config)
    rolls: list[RecordedRoll] = []
    actions: list[dict[str, Any]] = []
    transfers: list[dict[str, Any]] = []
    while not state.is_over:
        assert len(actions) < MAX_ACTIONS, f"game {index} does not end"
        action = _decide(state, rng, roll_again)
        try:
            result = step(
                state, action, balances=balances, roll_face=lambda n: roll(server_seed, client_seed, n).face
            )
        except (CannotPay, ChallengeUnaffordable) as refusal:
            kinds.add(f"refused:{refusal.code}")
            continue  # the service records only actions the rules applied; the policy will choose again
        actions.append({**action_to_dict(action), "balances": recorded_balances(balances, cap)})
        for event in result.events:
            if isinstance(event, Rolled):
                purpose = RollPurpose(event.purpose.value)
                rolls.append(
                    RecordedRoll.of(event.nonce, event.seat, accounts[event.seat], purpose, event.face)
                )
            elif isinstance(event, TimedOut):
                kinds.add(f"timeout:{event.phase.value}")
            elif isinstance(event, VoteDecided) and event.decision is VoteChoice.ROLL_AGAIN:
                kinds.add("roll_again:chain" if "roll_again" in kinds else "roll_again")
            elif isinstance(event, VigoBust):
                kinds.add(
                    "vigo_bust:survivors_split" if len(event.survivors) > 1 else "vigo_bust:lone_survivor"
                )
            elif isinstance(event, Settled) and len({payout.amount for payout in event.payouts}) > 1:
                kinds.add("split:remainder")
            elif isinstance(event, Raked):
                kinds.add("rake")
                kinds |= {"rake:capped"} if event.amount == event.rake_cap else set()
                kinds |= (
                    {"rake:split"} if any(t.kind is TransferKind.SPLIT for t in result.transfers) else set()
                )
        for transfer in result.transfers:
            if transfer.payee is not REVENUE:
                balances[transfer.seat] += -transfer.amount if transfer.into_pot else transfer.amount
            transfers.append(transfer.to_dict())
        state = result.state
    outcome = outcome_to_json(state.outcome)
    kinds.add(f"outcome:{outcome['reason']}")
    if state.phase is Phase.CANCELLED and not any(action["action"] == "timeout" for action in actions):
        kinds.add("cancel")

    key = OLD_KEY if index % 10 == 7 else NEW_KEY
    kinds |= {"key:retired"} if key is OLD_KEY else set()
    game_id = f"game_{index:04d}"
    seated = [SeatAccount(seat, accounts[seat]) for seat in config.seats]
    terms = GameTerms.of(stake, challenge_raise, seated, rake_bps=rake_bps, rake_cap=rake_cap)
    proof = build_proof(
        game_id=game_id,
        server_seed=server_seed,
        client_seeds=seeds,
        terms=terms,
        rolls=rolls,
        actions=actions,
        outcome=outcome,
        transfers=[
            TransferRecord(t["kind"], party_to_json(t["payer"]), party_to_json(t["payee"]), t["amount"])
            for t in transfers
        ],
        private_key=key,
    )
    receipt = build_commitment_receipt(
        game_id=game_id,
        server_seed_hash=server_seed_hash(server_seed),
        created_at=f"2025-03-{index % 28 + 1:02d}T{index % 24:02d}:{index % 60:02d}:00Z",
        terms=GameTerms.of(stake, challenge_raise, terms.seats[:1], rake_bps=rake_bps, rake_cap=rake_cap),
        private_key=key,
    )
    link = {
        "object": "fairness_link",
        "game_id": game_id,
        "status": state.phase.value,
        "revealed": True,
        "commitment": receipt,
        "client_seeds": proof["client_seeds"],
        "proof": proof,
        "keys_url": "/v1/fairness/keys",
    }
    return PlayedGame(link, transfers, outcome, frozenset(kinds))


@pytest.fixture(scope="module")
def games() -> list[PlayedGame]:
    return [play_random_game(index) for index in range(GAMES)]


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serving(Site(key_ring=KEY_RING.to_json())) as site:
        yield site


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Browser]:
    with browser_session() as browser:
        browser.open(f"{site.origin}/verify")
        yield browser


# Checks every published document in one page: the page's own verifyDocument, as the page runs it.
CHECK_ALL = """
(async () => {
  const documents = await (await fetch('/test/%s')).json();
  const keyRing = await (await fetch('/v1/fairness/keys')).json();
  const results = [];
  for (const document of documents) {
    const report = await PoknaVerifier.verifyDocument(document, { keyRing });
    results.push({
      state: report.verdict.state,
      failed: report.checks.filter((c) => c.status === 'fail').map((c) => c.name),
      messages: report.checks.filter((c) => c.status !== 'pass').map((c) => `${c.name}: ${c.message}`),
      transfers: report.replay ? report.replay.transfers : null,
      outcome: report.replay ? report.replay.outcome : null,
    });
  }
  document.body.dataset.checked = String(results.length);
  return results;
})()
"""


def check_all(
    browser: Browser, site: Site, name: str, documents: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    site.files[name] = documents
    results: list[dict[str, Any]] = browser.evaluate(CHECK_ALL % name, timeout=600)
    assert len(results) == len(documents)
    return results


def test_the_page_replays_a_thousand_random_games_as_the_engine_does(
    games: list[PlayedGame], site: Site, browser: Browser
) -> None:
    results = check_all(browser, site, "games.json", [game.link for game in games])
    disagreements = []
    for game, result in zip(games, results, strict=True):
        if (result["state"], result["transfers"], result["outcome"]) != (
            "valid",
            game.transfers,
            game.outcome,
        ):
            disagreements.append((game.link["game_id"], sorted(game.kinds), result["messages"]))
    assert not disagreements, f"{len(disagreements)} games differ, e.g. {disagreements[:3]}"

    covered = Counter(kind for game in games for kind in game.kinds)
    print("\nkinds covered by", GAMES, "games:", dict(sorted(covered.items())))
    short = {kind: covered[kind] for kind, least in REQUIRED_KINDS.items() if covered[kind] < least}
    assert not short, f"too few games of these kinds: {short}"


def test_the_python_verifier_accepts_the_same_games(games: list[PlayedGame]) -> None:
    """The generator plays by the rules: otherwise agreement with the page would prove nothing."""
    for game in games:
        report = verify_proof(game.proof, KEY_RING, replay=replay_proof, receipt=game.link["commitment"])
        assert report.valid, (game.link["game_id"], report.to_json())
        assert not report.not_run, (game.link["game_id"], report.to_json())


# ---- tampering ----------------------------------------------------------------------------------------

# One proof per kind of game, at tables of 2 to 7 players, so every field of each is changed once.
TAMPER_KINDS = (
    "outcome:challenge_won",
    "outcome:challenge_lost",
    "outcome:no_survivors",
    "outcome:claimed",
    "split:remainder",
    "roll_again",
    "vigo_bust:survivors_split",
    "vigo_bust:lone_survivor",
    "timeout:voting",
    "outcome:cancelled",
)


@dataclass(frozen=True)
class Tamper:
    label: str
    link: dict[str, Any]
    # A re-signed edit the rules cannot see: a balance that still covers (or still cannot cover) every
    # payment, or a vote whose effect another vote has too. The proof then still tells a legal game.
    may_be_harmless: bool
    expected_failed: frozenset[str] = (
        frozenset()
    )  # what verify_proof fails ("shape": it refuses the document)


def python_failed(link: dict[str, Any]) -> frozenset[str]:
    try:
        report = verify_proof(link["proof"], KEY_RING, replay=replay_proof, receipt=link["commitment"])
    except MalformedProofError:
        return frozenset({"shape"})
    return frozenset(check.name for check in report.failed)


def _with_proof(game: PlayedGame, proof: dict[str, Any]) -> dict[str, Any]:
    return {**game.link, "proof": proof}


def _re_signed(game: PlayedGame, proof: dict[str, Any]) -> dict[str, Any]:
    return _with_proof(game, sign_document(proof, NEW_KEY))


def _is_vote(proof: dict[str, Any], index: int) -> bool:
    return bool(proof["actions"][index]["action"] == "vote")


def _may_spend(action: dict[str, Any], seat: str) -> bool:
    """Whether a step can take money from this seat: the start takes every ante, a timeout may act for
    anyone, otherwise only the Vigo and the acting seat pay."""
    return action["action"] in ("start", "timeout") or seat in ("0", str(action.get("seat")))


def tampers_of(game: PlayedGame) -> Iterator[Tamper]:
    """Every leaf of the proof edited (signature left alone) and edited then re-signed by the operator (of
    the balances, those a step can spend from, also emptied); every leaf of the receipt edited; then the
    edits a cheating operator would make to the structure: a roll, action or transfer dropped, swapped or
    repeated."""
    proof = game.proof
    name = game.link["game_id"]
    for path in leaf_paths(proof):
        edited = with_leaf(proof, path, altered(get_at(proof, path)))
        label = ".".join(map(str, path))
        yield Tamper(f"{name} edited {label}", _with_proof(game, edited), False)
        if path[0] in ("key_id", "signature"):
            continue
        balance = path[0] == "actions" and path[2] == "balances"
        if balance and not _may_spend(proof["actions"][int(path[1])], str(path[3])):
            continue
        unseen = balance or (path[0] == "actions" and path[2] == "seat" and _is_vote(proof, int(path[1])))
        yield Tamper(f"{name} re-signed {label}", _re_signed(game, edited), unseen)
        if balance:
            yield Tamper(f"{name} re-signed {label}=0", _re_signed(game, with_leaf(proof, path, 0)), True)
    receipt = game.link["commitment"]
    for path in leaf_paths(receipt):
        changed = {**game.link, "commitment": with_leaf(receipt, path, altered(get_at(receipt, path)))}
        yield Tamper(f"{name} receipt edited {'.'.join(map(str, path))}", changed, False)
    for field in ("rolls", "actions", "transfers"):
        items = proof[field]
        for index in range(len(items)):
            dropped = _re_signed(game, {**proof, field: items[:index] + items[index + 1 :]})
            vote = field == "actions" and _is_vote(proof, index)
            yield Tamper(f"{name} re-signed {field}[{index}] dropped", dropped, vote)
        if len(items) > 1:
            swapped = _re_signed(game, {**proof, field: [items[1], items[0], *items[2:]]})
            yield Tamper(f"{name} re-signed {field}[0:2] swapped", swapped, False)
        if items:
            repeated = _re_signed(game, {**proof, field: [*items, items[-1]]})
            yield Tamper(f"{name} re-signed {field}[-1] repeated", repeated, False)


@pytest.fixture(scope="module")
def tampers(games: list[PlayedGame]) -> list[Tamper]:
    chosen: list[PlayedGame] = []
    for position, kind in enumerate(TAMPER_KINDS):
        candidates = [game for game in games if kind in game.kinds and game not in chosen]
        at_size = [game for game in candidates if f"players:{2 + position % 6}" in game.kinds] or candidates
        chosen.append(min(at_size, key=lambda game: len(list(leaf_paths(game.proof)))))
    return [
        Tamper(tamper.label, tamper.link, tamper.may_be_harmless, python_failed(tamper.link))
        for game in chosen
        for tamper in tampers_of(game)
    ]


def test_every_single_field_tamper_fails_the_same_checks_in_the_page_and_in_python(
    tampers: list[Tamper], site: Site, browser: Browser
) -> None:
    results = check_all(browser, site, "tampers.json", [tamper.link for tamper in tampers])
    disagreements = [
        (tamper.label, sorted(tamper.expected_failed), result["failed"], result["messages"])
        for tamper, result in zip(tampers, results, strict=True)
        if frozenset(result["failed"]) != tamper.expected_failed
    ]
    assert not disagreements, f"{len(disagreements)} of {len(tampers)} disagree, e.g. {disagreements[:3]}"

    valid = [tamper for tamper, result in zip(tampers, results, strict=True) if result["state"] == "valid"]
    assert all(tamper.may_be_harmless for tamper in valid), [t.label for t in valid if not t.may_be_harmless]
    invalid = len(tampers) - len(valid)
    print(
        f"\n{len(tampers)} tampered documents: {invalid} INVALID in the page and in Python; "
        f"{len(valid)} re-signed edits the rules cannot see (balances, interchangeable votes) VALID in both"
    )
    assert len(tampers) > 1500
    zeroed = [
        result["state"]
        for tamper, result in zip(tampers, results, strict=True)
        if tamper.label.endswith("=0")
    ]
    assert "invalid" in zeroed, (
        "no emptied balance changed what the rules allow: affordability is not exercised"
    )


def test_a_changed_leaf_of_each_kind_is_tried(tampers: list[Tamper]) -> None:
    labels = " ".join(tamper.label for tamper in tampers)
    for field in (
        ".face",
        ".color",
        ".nonce",
        ".seat",
        ".purpose",
        ".action",
        ".choice",
        ".balances.",
        ".kind",
        ".payer",
        ".payee",
        ".amount",
        "outcome.reason",
        "outcome.payouts.0.amount",
        "client_seeds.1.client_seed",
        "server_seed",
        "server_seed_hash",
        "key_id",
        "signature",
        "game.stake",
        "game.challenge_raise",
        "receipt edited created_at",
    ):
        assert field in labels, field
