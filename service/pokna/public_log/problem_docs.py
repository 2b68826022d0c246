"""The problems the public log's operations can answer (pokna.api.problem_docs has the mechanism)."""

from __future__ import annotations

from pokna.api.problem_docs import of
from pokna.errors import InvalidRequest, NotFound

LOG_EMPTY = of(NotFound, "tenant tnt_0c1d2e3f has no game in its public log yet")
CHECKPOINT_NOT_FOUND = of(NotFound, "tenant tnt_0c1d2e3f's public log signed no checkpoint of 9 games")
GAME_NOT_LOGGED = of(
    NotFound, "game game_0c1d2e3f is not in tenant tnt_0c1d2e3f's public log (not finished or not logged yet)"
)
SIZE_TOO_LARGE = of(NotFound, "the log holds 7 games; no tree of 9 is signed yet")
SIZES_BACKWARDS = of(InvalidRequest, "the first size (7) is after the second (4)")
