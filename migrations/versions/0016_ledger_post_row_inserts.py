"""`ledger_post()` inserts a batch's transactions and postings one row at a time (issue 34).

On Citus, `ledger_post()` runs on the worker that holds its tenant's shards (a delegated function), and each
statement in it is planned by Citus there. An `INSERT ... SELECT FROM unnest(...)` is not a statement Citus
can route as it stands: it evaluates the SELECT, gathers the rows and copies them into the shard ("executing
the copy locally"), which cost 2.6 ms of the 5.6 ms a deposit's `ledger_move()` took on the worker, for the
journal_transaction row alone, and 1.1 ms for the two postings (pg_stat_statements with track=all on the
worker, 300 keyed deposits). A single-row `INSERT ... VALUES` naming the tenant is routed to its shard
directly. So the two inserts become loops of single-row inserts, in the same order (the chain-link trigger
looks for each row's predecessor), with the same replay rule: nothing inserted under the batch's keys means
a replay, some but not all an error.

The function is 0014's, with those two statements replaced (the text is read from 0014, which never changes,
and the replacement fails loudly if 0014's text is not what it expects). The downgrade restores 0014's.

Revision ID: 0016_ledger_post_row_inserts
Revises: 0015_tenant_id_text
Create Date: 2026-12-03
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0016_ledger_post_row_inserts"
down_revision = "0015_tenant_id_text"
branch_labels = None
depends_on = None

_TRANSACTIONS_AT_ONCE = """    INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, idempotency_key,
        request_hash, posting_count, prev_hash, hash, created_at)
    SELECT t.id, p_tenant_id, v_chain, first_seq + t.n - 1, t.kind, t.reference, t.metadata::json, t.idempotency_key,
        t.request_hash,
        t.posting_count,
        CASE WHEN t.n = 1 THEN first_prev_hash ELSE hashes[t.n - 1] END, hashes[t.n], t.created_at
    FROM unnest(t_id, t_kind, t_reference, t_metadata, t_idempotency_key, t_request_hash, t_posting_count,
            t_created_at)
        WITH ORDINALITY AS t(id, kind, reference, metadata, idempotency_key, request_hash, posting_count,
            created_at, n)
    ORDER BY t.n
    -- A key is unique per tenant, and the check above ran under this chain's head only: a posting under the
    -- same key on another chain may have committed since (this insert waited for it). Then this is a replay.
    ON CONFLICT ON CONSTRAINT uq_journal_transaction_tenant_id_idempotency_key DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
"""

_TRANSACTIONS_ROW_BY_ROW = """    -- Row by row, in seq order (the chain-link trigger looks for each row's predecessor): on Citus a
    -- single-row insert naming the tenant goes to its shard, where INSERT ... SELECT gathers and copies.
    v_inserted := 0;
    FOR v_i IN 1 .. cardinality(t_id) LOOP
        INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, idempotency_key,
            request_hash, posting_count, prev_hash, hash, created_at)
        VALUES (t_id[v_i], p_tenant_id, v_chain, first_seq + v_i - 1, t_kind[v_i], t_reference[v_i],
            t_metadata[v_i]::json, t_idempotency_key[v_i], t_request_hash[v_i], t_posting_count[v_i],
            CASE WHEN v_i = 1 THEN first_prev_hash ELSE hashes[v_i - 1] END, hashes[v_i], t_created_at[v_i])
        -- A key is unique per tenant, and the check above ran under this chain's head only: a posting under
        -- the same key on another chain may have committed since (this insert waited for it): a replay.
        ON CONFLICT ON CONSTRAINT uq_journal_transaction_tenant_id_idempotency_key DO NOTHING;
        GET DIAGNOSTICS v_at = ROW_COUNT;
        v_inserted := v_inserted + v_at;
    END LOOP;
"""

_POSTINGS_AT_ONCE = """    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
    SELECT p.id, p_tenant_id, t_id[p.owner], p.leg, p.account_id, p.amount, p.currency
    FROM unnest(p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency)
        AS p(id, owner, leg, account_id, amount, currency);
"""

_POSTINGS_ROW_BY_ROW = """    FOR v_i IN 1 .. cardinality(p_id) LOOP
        INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
        VALUES (p_id[v_i], p_tenant_id, t_id[p_transaction[v_i]], p_leg[v_i], p_account_id[v_i], p_amount[v_i],
            p_currency[v_i]);
    END LOOP;
"""


def row_by_row(ledger_post: str) -> str:
    """0014's `ledger_post()` with its two multi-row inserts made loops of single-row inserts."""
    for at_once, row_by_row in (
        (_TRANSACTIONS_AT_ONCE, _TRANSACTIONS_ROW_BY_ROW),
        (_POSTINGS_AT_ONCE, _POSTINGS_ROW_BY_ROW),
    ):
        assert ledger_post.count(at_once) == 1, "0014's ledger_post() is not the text this migration expects"
        ledger_post = ledger_post.replace(at_once, row_by_row)
    return ledger_post


def upgrade() -> None:
    op.execute(row_by_row(_previous("0014_ledger_chains").LEDGER_POST))


def downgrade() -> None:
    op.execute(_previous("0014_ledger_chains").LEDGER_POST)


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
