"""The double-entry ledger: accounts, journal transactions, postings, chain heads, checkpoints.

The database guards the books itself (docs/ledger.md lists every invariant and where it is enforced):
PostgreSQL gets a DEFERRABLE INITIALLY DEFERRED constraint trigger that refuses any committed journal
transaction whose postings do not sum to zero per currency or are fewer than declared, append-only
triggers, a chain-link trigger, and a posting trigger that maintains `account.balance` (the only way that
column may change). (Until issue 23 an SQLite twin of these triggers lived here; PostgreSQL is now the
only database.)

Revision ID: 0002_ledger
Revises: 0001_tenant
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_ledger"
down_revision = "0001_tenant"
branch_labels = None
depends_on = None

# The genesis hash (64 zeros) is written out literally in the trigger bodies below.
MAX_POSTING_AMOUNT = 10**15
MAX_ABS_BALANCE = 10**18
APPEND_ONLY_TABLES = ("journal_transaction", "posting", "ledger_checkpoint")


def upgrade() -> None:
    _create_tables()
    _create_postgresql_triggers()


def downgrade() -> None:
    _drop_postgresql_triggers()
    op.drop_index("ix_ledger_checkpoint_tenant_id_seq", table_name="ledger_checkpoint")
    op.drop_table("ledger_checkpoint")
    op.drop_table("ledger_head")
    op.drop_index("ix_posting_account_id", table_name="posting")
    op.drop_table("posting")
    op.drop_table("journal_transaction")
    op.drop_index("ix_account_tenant_id", table_name="account")
    op.drop_table("account")


def _create_tables() -> None:
    op.create_table(
        "account",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("external_id", sa.String(200), nullable=True),
        sa.Column("balance", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('player_wallet', 'game_pot', 'house', 'external_funding')",
            name=op.f("ck_account_kind_known"),
        ),
        sa.CheckConstraint(
            "balance >= 0 OR kind NOT IN ('player_wallet', 'game_pot')",
            name=op.f("ck_account_balance_non_negative"),
        ),
        sa.CheckConstraint(
            f"balance BETWEEN {-MAX_ABS_BALANCE} AND {MAX_ABS_BALANCE}",
            name=op.f("ck_account_balance_bounded"),
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_account_tenant_id_tenant"),
        sa.PrimaryKeyConstraint("id", name="pk_account"),
        sa.UniqueConstraint("tenant_id", "kind", "external_id", name="uq_account_tenant_id_kind_external_id"),
    )
    op.create_index("ix_account_tenant_id", "account", ["tenant_id"])
    op.create_table(
        "journal_transaction",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("reference", sa.String(200), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("request_hash", sa.String(128), nullable=True),
        sa.Column("posting_count", sa.SmallInteger(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_journal_transaction_seq_positive")),
        sa.CheckConstraint("posting_count >= 2", name=op.f("ck_journal_transaction_at_least_two_postings")),
        sa.CheckConstraint(
            "length(prev_hash) = 64 AND length(hash) = 64", name=op.f("ck_journal_transaction_hash_length")
        ),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_journal_transaction_tenant_id_tenant"),
        sa.PrimaryKeyConstraint("id", name="pk_journal_transaction"),
        sa.UniqueConstraint("tenant_id", "seq", name="uq_journal_transaction_tenant_id_seq"),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name="uq_journal_transaction_tenant_id_idempotency_key"
        ),
    )
    op.create_table(
        "posting",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("transaction_id", sa.String(40), nullable=False),
        sa.Column("leg", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.String(40), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.CheckConstraint("leg >= 0", name=op.f("ck_posting_leg_non_negative")),
        sa.CheckConstraint(
            f"amount <> 0 AND amount BETWEEN {-MAX_POSTING_AMOUNT} AND {MAX_POSTING_AMOUNT}",
            name=op.f("ck_posting_amount_non_zero_bounded"),
        ),
        sa.ForeignKeyConstraint(["account_id"], ["account.id"], name="fk_posting_account_id_account"),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["journal_transaction.id"],
            name="fk_posting_transaction_id_journal_transaction",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_posting"),
        sa.UniqueConstraint("transaction_id", "leg", name="uq_posting_transaction_id_leg"),
    )
    op.create_index("ix_posting_account_id", "posting", ["account_id"])
    op.create_table(
        "ledger_head",
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_ledger_head_tenant_id_tenant"),
        sa.PrimaryKeyConstraint("tenant_id", name="pk_ledger_head"),
    )
    op.create_table(
        "ledger_checkpoint",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("tenant_id", sa.String(40), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_ledger_checkpoint_tenant_id_tenant"),
        sa.PrimaryKeyConstraint("id", name="pk_ledger_checkpoint"),
    )
    op.create_index("ix_ledger_checkpoint_tenant_id_seq", "ledger_checkpoint", ["tenant_id", "seq"])


# --- PostgreSQL ---------------------------------------------------------------------------------------
# Every refusal uses SQLSTATE 23000 (integrity_constraint_violation), so drivers report an IntegrityError.

_PG_FUNCTIONS = {
    "ledger_refuse_change": """
CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger: % is append-only; % refused (post a reversing transaction instead)',
        TG_TABLE_NAME, TG_OP USING ERRCODE = '23000';
END
$$""",
    "ledger_chain_link": """
CREATE FUNCTION ledger_chain_link() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.seq = 1 THEN
        IF NEW.prev_hash <> '0000000000000000000000000000000000000000000000000000000000000000' THEN
            RAISE EXCEPTION 'ledger: seq 1 of tenant % must follow the genesis hash', NEW.tenant_id
                USING ERRCODE = '23000';
        END IF;
    ELSIF NOT EXISTS (
        SELECT 1 FROM journal_transaction
        WHERE tenant_id = NEW.tenant_id AND seq = NEW.seq - 1 AND hash = NEW.prev_hash
    ) THEN
        RAISE EXCEPTION 'ledger: seq % of tenant % does not extend the chain (no seq % with hash %)',
            NEW.seq, NEW.tenant_id, NEW.seq - 1, NEW.prev_hash USING ERRCODE = '23000';
    END IF;
    RETURN NEW;
END
$$""",
    "ledger_posting_apply": """
CREATE FUNCTION ledger_posting_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    txn_tenant text;
    txn_posting_count int;
BEGIN
    SELECT tenant_id, posting_count INTO txn_tenant, txn_posting_count
        FROM journal_transaction WHERE id = NEW.transaction_id;
    IF NEW.leg >= txn_posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % declares % postings; leg % refused',
            NEW.transaction_id, txn_posting_count, NEW.leg USING ERRCODE = '23000';
    END IF;
    UPDATE account SET balance = balance + NEW.amount
        WHERE id = NEW.account_id AND tenant_id = txn_tenant AND currency = NEW.currency;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'ledger: posting % names account % of another tenant or currency',
            NEW.id, NEW.account_id USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$""",
    "ledger_account_guard": """
CREATE FUNCTION ledger_account_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
$$""",
    "ledger_check_balanced": """
CREATE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found_postings int;
    unbalanced_currency text;
BEGIN
    SELECT count(*) INTO found_postings FROM posting WHERE transaction_id = NEW.id;
    IF found_postings <> NEW.posting_count THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) has % postings but declares %',
            NEW.id, NEW.seq, found_postings, NEW.posting_count USING ERRCODE = '23000';
    END IF;
    SELECT currency INTO unbalanced_currency FROM posting WHERE transaction_id = NEW.id
        GROUP BY currency HAVING sum(amount) <> 0 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger: transaction % (seq %) does not balance in %',
            NEW.id, NEW.seq, unbalanced_currency USING ERRCODE = '23000';
    END IF;
    RETURN NULL;
END
$$""",
}

_PG_TRIGGERS = [
    *(
        (
            f"trg_{table}_append_only",
            table,
            f"CREATE TRIGGER trg_{table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()",
        )
        for table in APPEND_ONLY_TABLES
    ),
    *(
        (
            f"trg_{table}_no_truncate",
            table,
            f"CREATE TRIGGER trg_{table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()",
        )
        for table in APPEND_ONLY_TABLES
    ),
    (
        "trg_journal_transaction_chain_link",
        "journal_transaction",
        "CREATE TRIGGER trg_journal_transaction_chain_link BEFORE INSERT ON journal_transaction "
        "FOR EACH ROW EXECUTE FUNCTION ledger_chain_link()",
    ),
    (
        "trg_journal_transaction_balanced",
        "journal_transaction",
        "CREATE CONSTRAINT TRIGGER trg_journal_transaction_balanced AFTER INSERT ON journal_transaction "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced()",
    ),
    (
        "trg_posting_apply",
        "posting",
        "CREATE TRIGGER trg_posting_apply AFTER INSERT ON posting "
        "FOR EACH ROW EXECUTE FUNCTION ledger_posting_apply()",
    ),
    (
        "trg_account_guard",
        "account",
        "CREATE TRIGGER trg_account_guard BEFORE UPDATE ON account "
        "FOR EACH ROW EXECUTE FUNCTION ledger_account_guard()",
    ),
]


def _create_postgresql_triggers() -> None:
    for ddl in _PG_FUNCTIONS.values():
        op.execute(ddl)
    for _name, _table, ddl in _PG_TRIGGERS:
        op.execute(ddl)


def _drop_postgresql_triggers() -> None:
    for name, table, _ddl in reversed(_PG_TRIGGERS):
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
    for name in reversed(list(_PG_FUNCTIONS)):
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")
