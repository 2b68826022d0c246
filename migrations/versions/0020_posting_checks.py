"""Fewer statements per posting (issues 44 and 45): the posting's foreign keys replaced by the checks its
trigger already makes, the balanced check in one read, a transaction's two postings in one INSERT, and the
account guard left out of a posting's own balance update.

Per posting the database ran three foreign-key checks (to tenant, account and journal_transaction), the
posting trigger's two statements (the transaction's posting count, the balance UPDATE) and the account
guard's PL/pgSQL function on that UPDATE; per transaction, at COMMIT, two reads of its postings. What
stays enforced, and where (docs/ledger.md, "What the database checks per posting, and how"):

- posting -> journal_transaction: `ledger_posting_apply()` already read the transaction (its declared
  posting count) under the posting's tenant, then updated the balance: it now does both in one UPDATE
  (the posting count a subquery of its WHERE), and refuses a posting whose transaction it does not find, which is what the
  foreign key refused. Journal transactions are never deleted or truncated (append-only triggers), so no
  posting can lose its transaction afterwards.
- posting -> account: the trigger's `UPDATE account ... WHERE tenant_id, id, currency` already refused an
  account that is not the posting's tenant's (or not in its currency). What the foreign key also did, keep
  a named account from going, is now `ledger_account_guard()` on DELETE (refused while a posting names the
  account) and TRUNCATE (refused). A concurrent DELETE waits on the account row the posting's UPDATE
  locked, as it waited on the foreign key's KEY SHARE lock.
- posting -> tenant: a posting's account and transaction are its tenant's (both checked above), and each of
  those has its foreign key to tenant.
- `ledger_check_balanced()` counts and sums the postings in one statement (per currency, in a subquery).
- `ledger_post()` inserts a transaction's postings with one INSERT ... VALUES of two rows when there are two
  (a deposit, a withdrawal, most game transfers); other counts keep one INSERT a row.
- `trg_account_guard` gets a WHEN: the function runs for a client's UPDATE (trigger depth 0) or for a change
  of an immutable column; the posting trigger's balance UPDATE (depth 1), which the function let through,
  no longer calls it.

The downgrade restores the foreign keys, 0017's `ledger_post()`, 0011's posting and balanced-check
triggers' functions and 0002's account guard.

Revision ID: 0020_posting_checks
Revises: 0019_ledger_take_chain
Create Date: 2026-12-06
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0020_posting_checks"
down_revision = "0019_ledger_take_chain"
branch_labels = None
depends_on = None

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
) RETURNS record LANGUAGE plpgsql AS $$
DECLARE
    v_chain smallint := coalesce((p_batch->>'chain')::smallint, 0);
    v_accounts text[] := ARRAY(SELECT jsonb_array_elements_text(p_batch->'accounts'));
    v_kinds text[];
    v_seq bigint;
    v_hash text;
    v_prev_hash text;
    v_refused record;
    v_transaction record;
    v_posting record;
BEGIN
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

    -- The ledger's one lock order: a head, then accounts by ascending id (one chain per unit of work).
    -- NO KEY: a balance change never touches the key (docs/ledger.md, "Locking and concurrency").
    SELECT array_agg(id), array_agg(kind), array_agg(balance) INTO held_account_ids, v_kinds, held_balances
        FROM (
            SELECT id, kind, balance FROM account
            WHERE tenant_id = p_tenant_id AND id = ANY(v_accounts) ORDER BY id FOR NO KEY UPDATE
        ) AS locked;
    SELECT wanted.id INTO refused_account_id FROM unnest(v_accounts) WITH ORDINALITY AS wanted(id, n)
        WHERE array_position(held_account_ids, wanted.id) IS NULL ORDER BY wanted.n LIMIT 1;
    IF FOUND THEN
        status := 'account_not_found';
        RETURN;
    END IF;

    IF EXISTS (
        SELECT 1 FROM jsonb_each_text(p_batch->'expected_balances') AS expected(account_id, balance)
        WHERE held_balances[array_position(held_account_ids, expected.account_id)] <> expected.balance::bigint
    ) THEN
        status := 'balances_changed';
        RETURN;
    END IF;

    -- Every leg in order (transaction, then leg) on its account's running balance: the first that would
    -- take a balance beyond 10^18 (MAX_ABS_BALANCE) or a wallet or pot below zero refuses the batch.
    SELECT leg.account_id, leg.amount, leg.after INTO v_refused
        FROM (
            SELECT p.account_id, p.amount, t.n, p.leg,
                held_balances[array_position(held_account_ids, p.account_id)]
                    + sum(p.amount) OVER (PARTITION BY p.account_id ORDER BY t.n, p.leg) AS after
            FROM jsonb_array_elements(p_batch->'transactions') WITH ORDINALITY AS t(body, n),
                ROWS FROM (jsonb_to_recordset(t.body->'postings') AS (account_id text, amount bigint))
                    WITH ORDINALITY AS p(account_id, amount, leg)
        ) AS leg
        WHERE abs(leg.after) > 1000000000000000000
            OR (leg.after < 0 AND v_kinds[array_position(held_account_ids, leg.account_id)]
                IN ('player_wallet', 'game_pot'))
        ORDER BY leg.n, leg.leg LIMIT 1;
    IF FOUND THEN
        refused_account_id := v_refused.account_id;
        IF abs(v_refused.after) > 1000000000000000000 THEN
            status := 'balance_out_of_range';
            refused_balance := v_refused.after;
        ELSE
            status := 'insufficient_funds';
            refused_balance := v_refused.after - v_refused.amount;
            refused_change := v_refused.amount;
        END IF;
        RETURN;
    END IF;
    held_balances := ARRAY(
        SELECT held.balance + coalesce(sum(p.amount), 0)
        FROM unnest(held_account_ids, held_balances) WITH ORDINALITY AS held(id, balance, n)
            LEFT JOIN (
                SELECT p.account_id, p.amount
                FROM jsonb_array_elements(p_batch->'transactions') AS t(body),
                    jsonb_to_recordset(t.body->'postings') AS p(account_id text, amount bigint)
            ) AS p ON p.account_id = held.id
        GROUP BY held.n, held.balance ORDER BY held.n
    );

    -- Then each transaction in seq order: hashed onto the previous one, sha256(before_prev || prev_hash ||
    -- before_seq || seq || rest) over the parts the client encoded (pokna_verify.ledger.chain.hash_parts),
    -- inserted (the chain-link trigger finds its predecessor), and its postings after it in leg order (each
    -- applied to its balance by its trigger, in the order the running balances were checked in). INSERT ...
    -- VALUES: on Citus it is routed to the tenant's shard, where an INSERT ... SELECT from the document goes
    -- through Citus's pull-and-COPY path and costs more than the rows it saves (0016_ledger_post_row_inserts,
    -- 0017_ledger_post_document; bench/README.md, "Citus").
    first_seq := v_seq + 1;
    first_prev_hash := v_hash;
    hashes := '{}';
    FOR v_transaction IN
        SELECT * FROM jsonb_to_recordset(p_batch->'transactions') AS t(id text, kind text, reference text,
            metadata text, created_at timestamptz, before_prev bytea, before_seq bytea, rest bytea, postings jsonb)
    LOOP
        v_seq := v_seq + 1;
        v_prev_hash := v_hash;
        v_hash := encode(sha256(v_transaction.before_prev || convert_to(v_prev_hash, 'UTF8')
            || v_transaction.before_seq || convert_to(v_seq::text, 'UTF8') || v_transaction.rest), 'hex');
        hashes := hashes || v_hash;
        INSERT INTO journal_transaction (id, tenant_id, chain, seq, kind, reference, metadata, posting_count,
            prev_hash, hash, created_at)
        VALUES (v_transaction.id, p_tenant_id, v_chain, v_seq, v_transaction.kind, v_transaction.reference,
            v_transaction.metadata::json, jsonb_array_length(v_transaction.postings), v_prev_hash, v_hash,
            v_transaction.created_at);
        -- Two legs (a deposit's, a withdrawal's, most of a game's transfers): one INSERT of both rows.
        IF jsonb_array_length(v_transaction.postings) = 2 THEN
            INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
            VALUES (v_transaction.postings->0->>'id', p_tenant_id, v_transaction.id, 0,
                    v_transaction.postings->0->>'account_id', (v_transaction.postings->0->>'amount')::bigint,
                    v_transaction.postings->0->>'currency'),
                (v_transaction.postings->1->>'id', p_tenant_id, v_transaction.id, 1,
                    v_transaction.postings->1->>'account_id', (v_transaction.postings->1->>'amount')::bigint,
                    v_transaction.postings->1->>'currency');
            CONTINUE;
        END IF;
        FOR v_posting IN
            SELECT * FROM ROWS FROM (jsonb_to_recordset(v_transaction.postings)
                    AS (id text, account_id text, amount bigint, currency text))
                WITH ORDINALITY AS p(id, account_id, amount, currency, n)
        LOOP
            INSERT INTO posting (id, tenant_id, transaction_id, leg, account_id, amount, currency)
            VALUES (v_posting.id, p_tenant_id, v_transaction.id, v_posting.n - 1, v_posting.account_id,
                v_posting.amount, v_posting.currency);
        END LOOP;
    END LOOP;

    UPDATE ledger_head SET last_seq = v_seq, last_hash = v_hash WHERE tenant_id = p_tenant_id AND chain = v_chain;
    status := 'posted';
END
$$"""

LEDGER_POSTING_APPLY = """
CREATE OR REPLACE FUNCTION ledger_posting_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txn_posting_count int;
BEGIN
    -- One statement in the common case: the balance moves only if the posting's transaction is its tenant's
    -- and the leg is within its declared count, and the account is the tenant's in the posting's currency.
    UPDATE account SET balance = balance + NEW.amount
        WHERE account.tenant_id = NEW.tenant_id AND account.id = NEW.account_id
            AND account.currency = NEW.currency
            AND NEW.leg < (
                SELECT txn.posting_count FROM journal_transaction AS txn
                WHERE txn.tenant_id = NEW.tenant_id AND txn.id = NEW.transaction_id
            );
    IF FOUND THEN
        RETURN NULL;
    END IF;
    -- Refused: which of the three it was.
    SELECT posting_count INTO txn_posting_count
        FROM journal_transaction WHERE tenant_id = NEW.tenant_id AND id = NEW.transaction_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger: posting % names no transaction % of its tenant',
            NEW.id, NEW.transaction_id USING ERRCODE = '23000';
    END IF;
    IF NEW.leg >= txn_posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % declares % postings; leg % refused',
            NEW.transaction_id, txn_posting_count, NEW.leg USING ERRCODE = '23000';
    END IF;
    RAISE EXCEPTION 'ledger: posting % names account % of another tenant or currency',
        NEW.id, NEW.account_id USING ERRCODE = '23000';
END
$$"""

LEDGER_CHECK_BALANCED = """
CREATE OR REPLACE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_postings int;
    unbalanced_currency text;
BEGIN
    SELECT coalesce(sum(by_currency.postings), 0), min(by_currency.currency) FILTER (WHERE by_currency.total <> 0)
        INTO found_postings, unbalanced_currency
        FROM (
            SELECT currency, count(*) AS postings, sum(amount) AS total FROM posting
            WHERE tenant_id = NEW.tenant_id AND transaction_id = NEW.id GROUP BY currency
        ) AS by_currency;
    IF found_postings <> NEW.posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) has % postings but declares %',
            NEW.id, NEW.seq, found_postings, NEW.posting_count USING ERRCODE = '23000';
    END IF;
    IF unbalanced_currency IS NOT NULL THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) does not balance in %',
            NEW.id, NEW.seq, unbalanced_currency USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$"""

LEDGER_ACCOUNT_GUARD = """
CREATE OR REPLACE FUNCTION ledger_account_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'ledger: account is never truncated (postings name its rows)' USING ERRCODE = '23000';
    END IF;
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM posting WHERE tenant_id = OLD.tenant_id AND account_id = OLD.id) THEN
            RAISE EXCEPTION 'ledger: account % has postings and is never deleted', OLD.id
                USING ERRCODE = '23000';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.tenant_id IS DISTINCT FROM OLD.tenant_id
        OR NEW.kind IS DISTINCT FROM OLD.kind OR NEW.currency IS DISTINCT FROM OLD.currency
        OR NEW.external_id IS DISTINCT FROM OLD.external_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
    THEN
        RAISE EXCEPTION 'ledger: account % is immutable except for its balance', OLD.id
            USING ERRCODE = '23000';
    END IF;
    -- Depth 1 is a statement from a client; the posting trigger's own UPDATE runs at depth 2.
    IF NEW.balance IS DISTINCT FROM OLD.balance AND pg_trigger_depth() < 2 THEN
        RAISE EXCEPTION 'ledger: the balance of account % changes only by posting', OLD.id
            USING ERRCODE = '23000';
    END IF;
    RETURN NEW;
END
$$"""

ACCOUNT_TRIGGERS = [
    """CREATE TRIGGER trg_account_guard BEFORE UPDATE ON account FOR EACH ROW
    WHEN (pg_trigger_depth() < 1 OR (OLD.id, OLD.tenant_id, OLD.kind, OLD.currency, OLD.external_id,
        OLD.created_at) IS DISTINCT FROM (NEW.id, NEW.tenant_id, NEW.kind, NEW.currency, NEW.external_id,
        NEW.created_at))
    EXECUTE FUNCTION ledger_account_guard()""",
    """CREATE TRIGGER trg_account_keep BEFORE DELETE ON account
    FOR EACH ROW EXECUTE FUNCTION ledger_account_guard()""",
    """CREATE TRIGGER trg_account_no_truncate BEFORE TRUNCATE ON account
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_account_guard()""",
]

# (name, column, referenced table, referenced column) of the posting's foreign keys dropped here.
POSTING_FOREIGN_KEYS = [
    ("fk_posting_account_id_account", ["account_id", "tenant_id"], "account", ["id", "tenant_id"]),
    (
        "fk_posting_transaction_id_journal_transaction",
        ["transaction_id", "tenant_id"],
        "journal_transaction",
        ["id", "tenant_id"],
    ),
    ("fk_posting_tenant_id_tenant", ["tenant_id"], "tenant", ["id"]),
]


def upgrade() -> None:
    op.execute(LEDGER_POSTING_APPLY)
    op.execute(LEDGER_CHECK_BALANCED)
    op.execute(LEDGER_ACCOUNT_GUARD)
    op.execute("DROP TRIGGER trg_account_guard ON account")
    for trigger in ACCOUNT_TRIGGERS:
        op.execute(trigger)
    for name, _columns, _table, _referred in POSTING_FOREIGN_KEYS:
        op.drop_constraint(name, "posting", type_="foreignkey")
    op.execute(LEDGER_POST)


def downgrade() -> None:
    op.execute(_previous("0017_ledger_post_document").LEDGER_POST)
    for name, columns, table, referred in POSTING_FOREIGN_KEYS:
        op.create_foreign_key(name, "posting", table, columns, referred)
    op.execute("DROP TRIGGER trg_account_no_truncate ON account")
    op.execute("DROP TRIGGER trg_account_keep ON account")
    op.execute("DROP TRIGGER trg_account_guard ON account")
    first = _previous("0002_ledger")
    op.execute(
        first._PG_FUNCTIONS["ledger_account_guard"].replace(
            "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1
        )
    )
    op.execute(
        "CREATE TRIGGER trg_account_guard BEFORE UPDATE ON account "
        "FOR EACH ROW EXECUTE FUNCTION ledger_account_guard()"
    )
    keys = _previous("0011_distribution_keys")
    op.execute(keys.LEDGER_CHECK_BALANCED)
    op.execute(keys.LEDGER_POSTING_APPLY)


def _previous(revision_file: str) -> ModuleType:
    """An earlier migration, for the text of what it created (a migration file never changes)."""
    path = Path(__file__).with_name(f"{revision_file}.py")
    spec = importlib.util.spec_from_file_location(f"pokna_migration_{revision_file}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
