"""What the backlog gauges of `/metrics` report: work the database holds that the sweeper, the webhooks
worker or the beacon should already have done. Read by pokna.backlog, rendered by pokna.api.metrics_backlog;
plain data here, so that neither needs the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Late:
    """Work waiting: how much, and how long the oldest has waited past its time (0 when there is none)."""

    count: int
    oldest_seconds: float


@dataclass(frozen=True)
class Backlog:
    game_deadlines: Late
    """Games whose turn (or start) deadline passed, its default action not applied yet."""
    beacon_rolls: Late
    """Accepted beacon-mode rolls still waiting past their deadline (the round's due time plus 5 s)."""
    wallets_held_by_overdue_rolls: int
    """The seated wallets those rolls hold: their players can neither withdraw nor play elsewhere."""
    webhook_fan_out: Late
    """Outbox events not fanned out into deliveries yet (waiting since they occurred)."""
    webhook_delivery: Late
    """Deliveries a worker may attempt now (waiting since they became due)."""
    ledger_unsigned_seconds: float
    """Age of the oldest journal transaction no signed checkpoint covers yet (0 when all are)."""
