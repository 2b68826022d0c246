"""K hash chains per tenant: what one tenant's postings serialize on is split sixteen ways (issue 25).

Every posting of a tenant waited for its one ledger head row, held until COMMIT, so one tenant's write rate
was one over that hold whatever the hardware (docs/ledger.md, "Chains"). Now:
- `journal_transaction.chain` (0..15) and `ledger_head.chain`: a tenant's journal is LEDGER_CHAINS chains,
  each with its own head, its own gap-free `seq` from 1 and its own links; `UNIQUE (tenant_id, chain, seq)`
  replaces `UNIQUE (tenant_id, seq)`, and `ledger_head`'s key is `(tenant_id, chain)`;
- the chain-link trigger looks for a row's predecessor on its own chain;
- `ledger_post(text, jsonb)` reads the chain from its batch (`chain`, absent: 0), and locks, links and
  advances that chain's head only: postings on different chains of one tenant run in parallel; since an
  idempotency key is unique per tenant but checked under one chain's head, a key committed on another
  chain meanwhile makes the insert a replay (`ON CONFLICT ... DO NOTHING`), not a unique violation;
- `ledger_checkpoint.heads`: a checkpoint signs every chain's head (null for checkpoints taken before).

Every existing row is on chain 0 and keeps its seq, links and hash (chain 0 is hashed without a `chain` field,
pokna.ledger.chain), so the books and every export taken before verify as they did. `game_write()` and
`ledger_move()` pass their batches through unchanged: the client names the chain in the batch.

The downgrade is refused once any transaction is on another chain than 0 (the single chain could not hold
them); before that it restores 0011's function, the trigger and the keys.

Revision ID: 0014_ledger_chains
Revises: 0013_beacon_rolls
Create Date: 2026-12-02
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0014_ledger_chains"
down_revision = "0013_beacon_rolls"
branch_labels = None
depends_on = None

LEDGER_CHAINS = 16  # pokna.ledger.chain.LEDGER_CHAINS: a migration never imports the code it migrates for

CHAIN_LINK = """
CREATE OR REPLACE FUNCTION ledger_chain_link() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = 1 THEN
        IF NEW.prev_hash <> '0000000000000000000000000000000000000000000000000000000000000000' THEN
            RAISE EXCEPTION 'ledger: seq 1 of chain % of tenant % must follow the genesis hash',
                NEW.chain, NEW.tenant_id USING ERRCODE = '23000';
        END IF;
    ELSIF NOT EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = NEW.tenant_id AND chain = NEW.chain AND seq = NEW.seq - 1 AND hash = NEW.prev_hash
    ) THEN
        RAISE EXCEPTION 'ledger: seq % of chain % of tenant % does not extend the chain (no seq % with hash %)',
            NEW.seq, NEW.chain, NEW.tenant_id, NEW.seq - 1, NEW.prev_hash USING ERRCODE = '23000';
    END IF;
    RETURN NEW;
END
$$"""

LEDGER_POST = """
CREATE OR REPLACE FUNCTION ledger_post(
    p_tenant_id text,
    p_batch jsonb,
    OUT status text,
    OUT refused_account_id text,
    OUT refused_balance bigint,
    OUT refused_change bigint,
    OUT first_seq bigint,
    OUT first_prev_hash text,
    OUT hashes text[],
    OUT held_account_ids text[],
    OUT held_balances bigint[]
) LANGUAGE plpgsql AS $$
DECLARE
    p_account_ids text[];
    p_expected_ids text[];
    p_expected_balances bigint[];
    t_id text[];
    t_kind text[];
    t_reference text[];
    t_metadata text[];
    t_idempotency_key text[];
    t_request_hash text[];
    t_posting_count smallint[];
    t_created_at timestamptz[];
    t_before_prev bytea[];
    t_before_seq bytea[];
    t_rest bytea[];
    p_id text[];
    p_transaction int[];
    p_leg int[];
    p_account_id text[];
    p_amount bigint[];
    p_currency text[];
    v_keys text[];
    v_chain smallint;
    v_seq bigint;
    v_hash text;
    v_tenants text[];
    v_kinds text[];
    v_i int;
    v_at int;
    v_new bigint;
    v_inserted int;
BEGIN
    SELECT * INTO v_chain, p_account_ids, p_expected_ids, p_expected_balances, t_id, t_kind, t_reference, t_metadata,
            t_idempotency_key, t_request_hash, t_posting_count, t_created_at, t_before_prev, t_before_seq,
            t_rest, p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency
        FROM jsonb_to_record(p_batch) AS batch(chain smallint, accounts text[], expected_ids text[], expected_balances bigint[],
            t_id text[], t_kind text[], t_reference text[], t_metadata text[], t_idempotency_key text[],
            t_request_hash text[], t_posting_count smallint[], t_created_at timestamptz[],
            t_before_prev bytea[], t_before_seq bytea[], t_rest bytea[], p_id text[], p_transaction int[],
            p_leg int[], p_account_id text[], p_amount bigint[], p_currency text[]);

    v_chain := coalesce(v_chain, 0);
    SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head
        WHERE tenant_id = p_tenant_id AND chain = v_chain FOR UPDATE;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
            status := 'tenant_not_found';
            RETURN;
        END IF;
        INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash)
            VALUES (p_tenant_id, v_chain, 0, '0000000000000000000000000000000000000000000000000000000000000000')
            ON CONFLICT (tenant_id, chain) DO NOTHING;
        SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head
            WHERE tenant_id = p_tenant_id AND chain = v_chain FOR UPDATE;
    END IF;

    -- A fresh snapshot, taken after the head lock: a key committed by the previous holder is seen.
    v_keys := array_remove(t_idempotency_key, NULL);
    IF cardinality(v_keys) > 0 AND EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = p_tenant_id AND idempotency_key = ANY(v_keys)
    ) THEN
        status := 'replay';
        RETURN;
    END IF;

    -- The ledger's one lock order: a head, then accounts by ascending id (one chain per unit of work). NO KEY: see repository.lock_accounts.
    SELECT array_agg(id), array_agg(tenant_id), array_agg(kind), array_agg(balance)
        INTO held_account_ids, v_tenants, v_kinds, held_balances
        FROM (
            SELECT id, tenant_id, kind, balance FROM account
            WHERE tenant_id = p_tenant_id AND id = ANY(p_account_ids) ORDER BY id FOR NO KEY UPDATE
        ) AS locked;
    FOR v_i IN 1 .. cardinality(p_account_ids) LOOP
        v_at := array_position(held_account_ids, p_account_ids[v_i]);
        IF v_at IS NULL OR v_tenants[v_at] <> p_tenant_id THEN
            status := 'account_not_found';
            refused_account_id := p_account_ids[v_i];
            RETURN;
        END IF;
    END LOOP;

    FOR v_i IN 1 .. coalesce(cardinality(p_expected_ids), 0) LOOP
        IF held_balances[array_position(held_account_ids, p_expected_ids[v_i])]
            <> p_expected_balances[v_i] THEN
            status := 'balances_changed';
            RETURN;
        END IF;
    END LOOP;

    FOR v_i IN 1 .. cardinality(p_id) LOOP
        v_at := array_position(held_account_ids, p_account_id[v_i]);
        v_new := held_balances[v_at] + p_amount[v_i];
        IF abs(v_new) > 1000000000000000000 THEN  -- MAX_ABS_BALANCE, 10^18
            status := 'balance_out_of_range';
            refused_account_id := p_account_id[v_i];
            refused_balance := v_new;
            RETURN;
        END IF;
        IF v_new < 0 AND v_kinds[v_at] IN ('player_wallet', 'game_pot') THEN
            status := 'insufficient_funds';
            refused_account_id := p_account_id[v_i];
            refused_balance := held_balances[v_at];
            refused_change := p_amount[v_i];
            RETURN;
        END IF;
        held_balances[v_at] := v_new;
    END LOOP;

    first_seq := v_seq + 1;
    first_prev_hash := v_hash;
    hashes := '{}';
    FOR v_i IN 1 .. cardinality(t_id) LOOP
        v_seq := v_seq + 1;
        v_hash := encode(sha256(t_before_prev[v_i] || convert_to(v_hash, 'UTF8') || t_before_seq[v_i]
            || convert_to(v_seq::text, 'UTF8') || t_rest[v_i]), 'hex');
        hashes := hashes || v_hash;
    END LOOP;

    -- In seq order: the chain-link trigger looks for each row's predecessor.
    INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, idempotency_key,
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
    IF v_inserted = 0 THEN
        status := 'replay';
        RETURN;
    ELSIF v_inserted < cardinality(t_id) THEN
        RAISE EXCEPTION USING ERRCODE = '23505',
            MESSAGE = 'ledger_post: some of the batch''s idempotency keys were posted on another chain meanwhile';
    END IF;
    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
    SELECT p.id, p_tenant_id, t_id[p.owner], p.leg, p.account_id, p.amount, p.currency
    FROM unnest(p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency)
        AS p(id, owner, leg, account_id, amount, currency);
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id AND chain = v_chain;
    status := 'posted';
END
$$
"""


def upgrade() -> None:
    chain_range = f"chain BETWEEN 0 AND {LEDGER_CHAINS - 1}"
    for table in ("journal_transaction", "ledger_head"):
        op.add_column(table, sa.Column("chain", sa.SmallInteger(), server_default="0", nullable=False))
        op.create_check_constraint(op.f(f"ck_{table}_chain_in_range"), table, chain_range)
    op.drop_constraint("uq_journal_transaction_tenant_id_seq", "journal_transaction", type_="unique")
    op.create_unique_constraint(
        "uq_journal_transaction_tenant_id_chain_seq", "journal_transaction", ["tenant_id", "chain", "seq"]
    )
    op.drop_constraint("pk_ledger_head", "ledger_head", type_="primary")
    op.create_primary_key("pk_ledger_head", "ledger_head", ["tenant_id", "chain"])
    op.add_column("ledger_checkpoint", sa.Column("heads", sa.JSON(), nullable=True))
    op.execute(CHAIN_LINK)
    op.execute(LEDGER_POST)


def downgrade() -> None:
    op.execute(
        """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM journal_transaction WHERE chain <> 0) THEN
        RAISE EXCEPTION 'ledger: transactions on chains other than 0 cannot return to a single chain';
    END IF;
END
$$"""
    )
    op.execute(_previous("0011_distribution_keys").LEDGER_POST)
    op.execute(
        _previous("0002_ledger")
        ._PG_FUNCTIONS["ledger_chain_link"]
        .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    )
    op.drop_column("ledger_checkpoint", "heads")
    # Heads a refused or replayed first posting created on another chain (seq 0): nothing hangs on them.
    op.execute("DELETE FROM ledger_head WHERE chain <> 0 AND last_seq = 0")
    op.drop_constraint("pk_ledger_head", "ledger_head", type_="primary")
    op.create_primary_key("pk_ledger_head", "ledger_head", ["tenant_id"])
    op.drop_constraint("uq_journal_transaction_tenant_id_chain_seq", "journal_transaction", type_="unique")
    op.create_unique_constraint(
        "uq_journal_transaction_tenant_id_seq", "journal_transaction", ["tenant_id", "seq"]
    )
    for table in ("journal_transaction", "ledger_head"):
        op.drop_constraint(op.f(f"ck_{table}_chain_in_range"), table, type_="check")
        op.drop_column(table, "chain")


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
