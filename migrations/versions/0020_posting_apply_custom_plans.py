"""ledger_posting_apply() plans its statements at each call (`plan_cache_mode = force_custom_plan`), so a
Citus worker's plan follows the shard's size and statistics (issue 45, "why the workers' CPU grows").

The posting trigger reads its transaction's `posting_count` (`WHERE tenant_id = ... AND id = ...`). On
PostgreSQL, PL/pgSQL keeps a generic plan of that statement and replans it when ANALYZE changes the table's
statistics. On a Citus worker the statement names the distributed table, the worker's empty shell of it;
Citus keeps the plan of the local shard's query inside that generic plan (its local plan cache) and never
replans it: ANALYZE of the shard does not reach it, and it lives as long as the worker's connection (up to
`citus.max_cached_connection_lifetime`, 10 minutes by default). A plan made while the shard was empty or
small takes the `(tenant_id, chain, seq)` index or a sequential scan (no statistics tell the planner that
`id` is the key), and from then on every posting reads all of its tenant's journal rows: in
bench/citus_http.py the statement's buffers per call went 220 -> 1,100 -> 6,000 phase after phase on the
workers, against 4 on PostgreSQL once autovacuum had analyzed the table (bench/README.md, "Issue 45: why the
workers' CPU per request grew").

A custom plan is made at each call with the shard as it is then: the primary key once the shard has more
than a few hundred rows. It costs a planning of the trigger's two statements per posting, on PostgreSQL
too, where it is not needed (measured in the same section); the function's body does not change.

Revision ID: 0020_posting_apply_custom_plans
Revises: 0018_game_log
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0020_posting_apply_custom_plans"
down_revision = "0018_game_log"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER FUNCTION ledger_posting_apply() SET plan_cache_mode = force_custom_plan")


def downgrade() -> None:
    op.execute("ALTER FUNCTION ledger_posting_apply() RESET plan_cache_mode")
