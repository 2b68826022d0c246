"""Keys a distributed database can keep: every tenant-owned row carries `tenant_id`, and every primary key,
unique constraint and foreign key between tenant-owned tables includes it (issue 25, docs/scaling.md).

Citus distributes a table by one column and enforces a key only when the key holds that column; a foreign
key between two distributed tables only when both sides are matched on it. So:
- `posting`, `game_seat`, `game_event` and `game_roll` get `tenant_id` (filled from their transaction or
  game), NOT NULL, with a foreign key to `tenant`;
- each primary key and unique constraint of a tenant-owned table is extended by `tenant_id` (put last,
  so every lookup that used the old key still finds it as the index's prefix), and each foreign key
  between them pairs `tenant_id` with `tenant_id` (the constraints keep their names);
- `game.public_token` is unique per tenant, and a new reference table `game_link (public_token,
  tenant_id)` says which tenant a public link belongs to, read before the tenant is known (as `api_key`
  is); every game's existing link is entered, so links already handed out keep working;
- the ledger's trigger functions, `ledger_post(text, jsonb)` and `game_write(text, json)` name the
  tenant in every statement (CREATE OR REPLACE; the same signatures);
- 0004's `ledger_post` with 22 arrays is dropped: it inserts postings without their tenant, and no code
  that calls it can run on this schema.

The downgrade restores the previous keys and the previous function bodies (read from the migrations
that created them, which never change) and drops the new columns and `game_link`. `posting` is
append-only by trigger, so the trigger is disabled while its new column is filled (and emptied again),
inside the migration's transaction.

Revision ID: 0011_distribution_keys
Revises: 0010_ledger_move
Create Date: 2026-12-02
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

revision = "0011_distribution_keys"
down_revision = "0010_ledger_move"
branch_labels = None
depends_on = None

# Tables that get the column, and where each row's tenant is found.
_NEW_TENANT_COLUMN = {
    "posting": ("journal_transaction", "transaction_id"),
    "game_seat": ("game", "game_id"),
    "game_event": ("game", "game_id"),
    "game_roll": ("game", "game_id"),
}
# Primary keys, before -> after (tenant_id last).
_PRIMARY_KEYS = {
    "account": ["id"],
    "journal_transaction": ["id"],
    "posting": ["id"],
    "ledger_checkpoint": ["id"],
    "game_table": ["id"],
    "game": ["id"],
    "game_seat": ["game_id", "seat"],
    "game_event": ["game_id", "seq"],
    "game_roll": ["game_id", "nonce"],
    "webhook_event": ["seq"],
    "webhook_endpoint": ["id"],
    "webhook_delivery": ["id"],
}
_UNIQUES = {
    "posting": ["transaction_id", "leg"],
    "game_seat": ["game_id", "account_id"],
    "webhook_event": ["id"],
    "webhook_delivery": ["event_seq", "endpoint_id"],
}
# (table, column, referenced table, referenced column, ON DELETE)
_FOREIGN_KEYS = [
    ("posting", "account_id", "account", "id", None),
    ("posting", "transaction_id", "journal_transaction", "id", None),
    ("game", "pot_account_id", "account", "id", None),
    ("game", "table_id", "game_table", "id", None),
    ("game_seat", "account_id", "account", "id", None),
    ("game_seat", "game_id", "game", "id", None),
    ("game_event", "game_id", "game", "id", None),
    ("game_roll", "game_id", "game", "id", None),
    ("webhook_delivery", "endpoint_id", "webhook_endpoint", "id", "CASCADE"),
    ("webhook_delivery", "event_seq", "webhook_event", "seq", "CASCADE"),
]
_LEDGER_TRIGGER_FUNCTIONS = ("ledger_posting_apply", "ledger_check_balanced")

LEDGER_POSTING_APPLY = """
CREATE OR REPLACE FUNCTION ledger_posting_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txn_posting_count int;
BEGIN
    SELECT posting_count INTO txn_posting_count
        FROM journal_transaction WHERE tenant_id = NEW.tenant_id AND id = NEW.transaction_id;
    IF NEW.leg >= txn_posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % declares % postings; leg % refused',
            NEW.transaction_id, txn_posting_count, NEW.leg USING ERRCODE = '23000';
    END IF;
    UPDATE account SET balance = balance + NEW.amount
        WHERE tenant_id = NEW.tenant_id AND id = NEW.account_id AND currency = NEW.currency;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger: posting % names account % of another tenant or currency',
            NEW.id, NEW.account_id USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$"""

LEDGER_CHECK_BALANCED = """
CREATE OR REPLACE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_postings int;
    unbalanced_currency text;
BEGIN
    SELECT count(*) INTO found_postings FROM posting WHERE tenant_id = NEW.tenant_id AND transaction_id = NEW.id;
    IF found_postings <> NEW.posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) has % postings but declares %',
            NEW.id, NEW.seq, found_postings, NEW.posting_count USING ERRCODE = '23000';
    END IF;
    SELECT currency INTO unbalanced_currency FROM posting WHERE tenant_id = NEW.tenant_id AND transaction_id = NEW.id
        GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) does not balance in %',
            NEW.id, NEW.seq, unbalanced_currency USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$"""

# 0005's ledger_post(), every statement naming the tenant: the accounts are locked by tenant and id, and
# each posting is written with its tenant.
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
    v_seq bigint;
    v_hash text;
    v_tenants text[];
    v_kinds text[];
    v_i int;
    v_at int;
    v_new bigint;
BEGIN
    SELECT * INTO p_account_ids, p_expected_ids, p_expected_balances, t_id, t_kind, t_reference, t_metadata,
            t_idempotency_key, t_request_hash, t_posting_count, t_created_at, t_before_prev, t_before_seq,
            t_rest, p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency
        FROM jsonb_to_record(p_batch) AS batch(accounts text[], expected_ids text[], expected_balances bigint[],
            t_id text[], t_kind text[], t_reference text[], t_metadata text[], t_idempotency_key text[],
            t_request_hash text[], t_posting_count smallint[], t_created_at timestamptz[],
            t_before_prev bytea[], t_before_seq bytea[], t_rest bytea[], p_id text[], p_transaction int[],
            p_leg int[], p_account_id text[], p_amount bigint[], p_currency text[]);

    SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head WHERE tenant_id = p_tenant_id FOR UPDATE;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
            status := 'tenant_not_found';
            RETURN;
        END IF;
        INSERT INTO ledger_head (tenant_id, last_seq, last_hash)
            VALUES (p_tenant_id, 0, '0000000000000000000000000000000000000000000000000000000000000000')
            ON CONFLICT (tenant_id) DO NOTHING;
        SELECT last_seq, last_hash INTO v_seq, v_hash FROM ledger_head WHERE tenant_id = p_tenant_id FOR UPDATE;
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

    -- The ledger's one lock order: head, then accounts by ascending id. NO KEY: see repository.lock_accounts.
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
    INSERT INTO journal_transaction (id, tenant_id, seq, kind, reference, metadata, idempotency_key,
        request_hash, posting_count, prev_hash, hash, created_at)
    SELECT t.id, p_tenant_id, first_seq + t.n - 1, t.kind, t.reference, t.metadata::json, t.idempotency_key,
        t.request_hash,
        t.posting_count,
        CASE WHEN t.n = 1 THEN first_prev_hash ELSE hashes[t.n - 1] END, hashes[t.n], t.created_at
    FROM unnest(t_id, t_kind, t_reference, t_metadata, t_idempotency_key, t_request_hash, t_posting_count,
            t_created_at)
        WITH ORDINALITY AS t(id, kind, reference, metadata, idempotency_key, request_hash, posting_count,
            created_at, n)
    ORDER BY t.n;
    INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
    SELECT p.id, p_tenant_id, t_id[p.owner], p.leg, p.account_id, p.amount, p.currency
    FROM unnest(p_id, p_transaction, p_leg, p_account_id, p_amount, p_currency)
        AS p(id, owner, leg, account_id, amount, currency);
    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id;
    status := 'posted';
END
$$
"""

# 0009's game_write(), every statement naming the tenant: the seats' UPDATE, the events' and rolls' INSERTs.
GAME_WRITE = """
CREATE OR REPLACE FUNCTION game_write(p_tenant_id text, p_write json) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_step json;
    v_game_id text;
    v_post record;
    v_first_seq bigint;
    v_count int;
BEGIN
    FOR v_step IN SELECT value FROM json_array_elements(p_write->'steps') LOOP
        v_game_id := v_step->>'game_id';
        v_first_seq := NULL;
        IF json_typeof(v_step->'batch') = 'object' THEN
            SELECT * INTO v_post FROM ledger_post(p_tenant_id, (v_step->'batch')::jsonb);
            IF v_post.status <> 'posted' THEN
                RAISE EXCEPTION USING ERRCODE = 'PK409', MESSAGE = 'ledger_post: ' || v_post.status,
                    DETAIL = json_build_object('status', v_post.status,
                        'account_id', v_post.refused_account_id, 'balance', v_post.refused_balance,
                        'change', v_post.refused_change)::text;
            END IF;
            v_first_seq := v_post.first_seq;
        END IF;

        UPDATE game SET status = saved.status, state = saved.state, version = saved.version,
            event_count = saved.event_count, revealed_server_seed = saved.revealed_server_seed,
            game_client_seed = saved.game_client_seed, proof = saved.proof,
            turn_deadline_at = saved.turn_deadline_at, started_at = saved.started_at, ended_at = saved.ended_at
        FROM json_populate_record(NULL::game, v_step->'game') AS saved
        WHERE game.id = v_game_id AND game.tenant_id = p_tenant_id
            AND game.version = (v_step->>'previous_version')::int;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        IF v_count <> 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'PK500',
                MESSAGE = 'game ' || v_game_id || ' changed under its row lock';
        END IF;

        IF json_array_length(v_step->'seats') > 0 THEN
            UPDATE game_seat SET client_seed = seeded.client_seed, client_seed_source = seeded.client_seed_source
            FROM json_populate_recordset(NULL::game_seat, v_step->'seats') AS seeded
            WHERE game_seat.tenant_id = p_tenant_id AND game_seat.game_id = v_game_id
                AND game_seat.seat = seeded.seat;
        END IF;

        INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
        SELECT p_tenant_id, v_game_id, event.seq, event.kind, event.payload, event.occurred_at
        FROM json_populate_recordset(NULL::game_event, v_step->'events') AS event;
        IF v_first_seq IS NOT NULL THEN
            INSERT INTO game_event (tenant_id, game_id, seq, kind, payload, occurred_at)
            SELECT p_tenant_id, v_game_id, money.seq, 'money_moved',
                (money.head || ',"ledger_seq":' || (v_first_seq + money.n - 1) || '}')::json, money.occurred_at
            FROM json_to_recordset(v_step->'money') AS money(n int, seq int, occurred_at timestamptz, head text);
        END IF;
        INSERT INTO game_roll (tenant_id, game_id, nonce, seat, purpose, face, color, rolled_at)
        SELECT p_tenant_id, v_game_id, roll.nonce, roll.seat, roll.purpose, roll.face, roll.color, roll.rolled_at
        FROM json_populate_recordset(NULL::game_roll, v_step->'rolls') AS roll;
    END LOOP;

    INSERT INTO webhook_event (id, tenant_id, type, ordering_key, body, occurred_at)
    SELECT message.id, p_tenant_id, message.type, message.ordering_key, message.body, message.occurred_at
    FROM json_populate_recordset(NULL::webhook_event, p_write->'outbox') AS message;

    IF json_typeof(p_write->'answer') = 'object' THEN
        UPDATE idempotency_record SET response_status = (p_write->'answer'->>'status')::int,
            response_body = p_write->'answer'->>'body', locked_until = NULL
        WHERE tenant_id = p_tenant_id AND key = p_write->'answer'->>'key';
    END IF;
END
$$
"""


def upgrade() -> None:
    for table, (source, column) in _NEW_TENANT_COLUMN.items():
        op.add_column(table, sa.Column("tenant_id", sa.String(length=40), nullable=True))
        if table == "posting":
            op.execute("ALTER TABLE posting DISABLE TRIGGER trg_posting_append_only")
        op.execute(
            f"UPDATE {table} SET tenant_id = {source}.tenant_id FROM {source} "  # noqa: S608
            f"WHERE {source}.id = {table}.{column}"
        )
        if table == "posting":
            op.execute("ALTER TABLE posting ENABLE TRIGGER trg_posting_append_only")
        op.alter_column(table, "tenant_id", nullable=False)
        op.create_foreign_key(f"fk_{table}_tenant_id_tenant", table, "tenant", ["tenant_id"], ["id"])
    for table, column, referenced, _, _ in _FOREIGN_KEYS:
        op.drop_constraint(f"fk_{table}_{column}_{referenced}", table, type_="foreignkey")
    for table, columns in _UNIQUES.items():
        op.drop_constraint(f"uq_{table}_{'_'.join(columns)}", table, type_="unique")
    for table, columns in _PRIMARY_KEYS.items():
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, [*columns, "tenant_id"])
    for table, columns in _UNIQUES.items():
        op.create_unique_constraint(
            f"uq_{table}_{'_'.join(columns)}_tenant_id", table, [*columns, "tenant_id"]
        )
    for table, column, referenced, referenced_column, on_delete in _FOREIGN_KEYS:
        op.create_foreign_key(
            f"fk_{table}_{column}_{referenced}",
            table,
            referenced,
            [column, "tenant_id"],
            [referenced_column, "tenant_id"],
            ondelete=on_delete,
        )
    _link_games()
    for function in (LEDGER_POSTING_APPLY, LEDGER_CHECK_BALANCED, LEDGER_POST, GAME_WRITE):
        op.execute(function)
    op.execute(f"DROP FUNCTION ledger_post({_ARRAY_ARGUMENTS})")


def downgrade() -> None:
    op.execute(_previous("0004_ledger_post").LEDGER_POST)
    op.execute(_or_replace(_previous("0005_ledger_post_json").LEDGER_POST))
    op.execute(_or_replace(_previous("0009_game_write").GAME_WRITE))
    ledger = _previous("0002_ledger")
    for name in _LEDGER_TRIGGER_FUNCTIONS:
        op.execute(_or_replace(ledger._PG_FUNCTIONS[name]))
    _unlink_games()
    for table, column, referenced, _, _ in _FOREIGN_KEYS:
        op.drop_constraint(f"fk_{table}_{column}_{referenced}", table, type_="foreignkey")
    for table, columns in _UNIQUES.items():
        op.drop_constraint(f"uq_{table}_{'_'.join(columns)}_tenant_id", table, type_="unique")
    for table, columns in _PRIMARY_KEYS.items():
        op.drop_constraint(f"pk_{table}", table, type_="primary")
        op.create_primary_key(f"pk_{table}", table, columns)
    for table, columns in _UNIQUES.items():
        op.create_unique_constraint(f"uq_{table}_{'_'.join(columns)}", table, columns)
    for table, column, referenced, referenced_column, on_delete in _FOREIGN_KEYS:
        op.create_foreign_key(
            f"fk_{table}_{column}_{referenced}",
            table,
            referenced,
            [column],
            [referenced_column],
            ondelete=on_delete,
        )
    for table in reversed(_NEW_TENANT_COLUMN):
        op.drop_constraint(f"fk_{table}_tenant_id_tenant", table, type_="foreignkey")
        op.drop_column(table, "tenant_id")


def _link_games() -> None:
    op.create_table(
        "game_link",
        sa.Column("public_token", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=40), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_game_link_tenant_id_tenant"),
        sa.PrimaryKeyConstraint("public_token", name="pk_game_link"),
    )
    op.execute(
        "INSERT INTO game_link (public_token, tenant_id) "
        "SELECT public_token, tenant_id FROM game WHERE public_token IS NOT NULL"
    )
    op.drop_index("ix_game_public_token", table_name="game")
    op.create_unique_constraint("uq_game_public_token_tenant_id", "game", ["public_token", "tenant_id"])


def _unlink_games() -> None:
    op.drop_constraint("uq_game_public_token_tenant_id", "game", type_="unique")
    op.create_index("ix_game_public_token", "game", ["public_token"], unique=True)
    op.drop_table("game_link")


# 0004's overload: the tenant and 21 arrays.
_ARRAY_ARGUMENTS = (
    "text, text[], text[], bigint[], text[], text[], text[], text[], text[], text[], text[], smallint[], "
    "timestamp with time zone[], bytea[], bytea[], bytea[], text[], integer[], integer[], text[], bigint[], text[]"
)


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _or_replace(ddl: str) -> str:
    return ddl.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
