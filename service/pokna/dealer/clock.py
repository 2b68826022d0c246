"""The moment a request or a sweep acts at: part of the game as locked (pokna.dealer.locked.LockedGame)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Clock:
    """The moment a request or a sweep acts at, and how long an open game waits for its start."""

    now: datetime
    open_game_ttl: timedelta
    interrupted_at: datetime | None = None
    """For a retried action: when its first attempt began, which the service failed to finish."""

    def resuming(self, interrupted_at: datetime | None) -> Clock:
        """The clock of a retried action whose first attempt began at `interrupted_at` (None: not one)."""
        return replace(self, interrupted_at=interrupted_at)

    def for_deadlines(self) -> Clock:
        """The moment up to which deadlines apply before an action. A seat whose action was in flight
        when the service failed did not let its turn run out: deadlines that passed after the first
        attempt began (during the outage, or while the client waited to retry) are not applied before
        the retried action; it is decided as if it had arrived then, and stamped now."""
        if self.interrupted_at is None or self.interrupted_at >= self.now:
            return self
        return replace(self, now=self.interrupted_at)

    def restarted(self, now: datetime) -> Clock:
        """The clock of a decision made later in the same request (a beacon roll resolved after its wait):
        timed from `now`, no longer a retry's."""
        return replace(self, now=now, interrupted_at=None)
