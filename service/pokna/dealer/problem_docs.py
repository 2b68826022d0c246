"""The problems the dealer's operations can answer, built from the errors that raise them
(pokna.api.problem_docs has the mechanism and the kernel's own)."""

from __future__ import annotations

from pokna.api.problem_docs import ProblemDoc, of
from pokna.dealer.beacon_rolls import RollPending
from pokna.dealer.errors import REFUSAL_STATUS, ClientSeedLocked, NotSeated, RoundInProgress, VersionConflict
from pokna.errors import InvalidRequest, NotFound, WalletHeld


def refusal(code: str, detail: str) -> ProblemDoc:
    """A refusal by the rules of the game (pokna.dealer.errors.ActionRefused), by its stable code."""
    return ProblemDoc(REFUSAL_STATUS[code], code, "Action refused by the rules", detail)


GAME_NOT_FOUND = of(NotFound, "no game game_0c1d2e3f")
TABLE_NOT_FOUND = of(NotFound, "no table tbl_0c1d2e3f")
LINK_NOT_FOUND = of(NotFound, "no such fairness link")
BAD_SEATING = of(InvalidRequest, "account acct_0c1d already sits at body.vigo_account_id")
NOT_SEATED = of(NotSeated, "account acct_0c1d has no seat in this game")
VERSION_CONFLICT = of(VersionConflict, "expected version 7, the game is at 8")
CLIENT_SEED_LOCKED = of(ClientSeedLocked, "client seeds can be set only before the game starts")
ROLL_PENDING = (
    of(RollPending, "the game's accepted roll waits for drand round 5318008 (due 2026-12-02T14:00:03.000Z)"),
    of(WalletHeld, "wallet acct_0c1d is held by game game_9a8b until its accepted roll is resolved"),
)
ROUND_IN_PROGRESS = of(RoundInProgress, "round 3 (game_0c1d) has not ended")
ACTION_REFUSALS = (
    refusal("wrong_phase", "vote is not allowed while the game is seeking"),
    refusal("not_your_turn", "seat 1 may not act now; waiting on [2]"),
    refusal("already_voted", "seat 1 has already voted on this pass"),
    refusal("game_over", "the game is settled; no further actions"),
    refusal("cannot_pay", "seats [3] cannot pay 10"),
    refusal("challenge_unaffordable", "seat 1 cannot match a challenge raise of 10"),
)
