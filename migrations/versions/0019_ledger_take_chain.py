"""A deposit or a withdrawal takes a free chain of its tenant's instead of its wallet's (issue 44).

A chain's head is locked until COMMIT, and a durable COMMIT waits for its WAL flush: two of one tenant's
writers whose keys hashed to the same of its 16 chains queued behind each other's flush, and one tenant
ran at 0.60-0.74x of eight tenants' keyed deposits (bench/README.md, "Issue 44"). `ledger_take_chain(tenant,
preferred)` takes the first free chain from `preferred` on, `FOR UPDATE SKIP LOCKED`, making the tenant's
16 heads on first need, and waits for `preferred`'s only when all 16 are taken. pokna.ledger.moving calls it
before it encodes the transaction (whose hashed bytes name the chain, and whose other leg is that chain's
funding sub-account), in the round trip that reads the wallet. A game's transfers stay on its game's chain
(docs/ledger.md, "Chains": the audit bundle follows a game's money in (chain, seq) order).

Every tenant gets its 16 heads now (a head with `last_seq` 0 is what ledger_post() makes on a chain's first
posting, and what every reader of the heads already leaves out), so its first writers find them; a tenant
created later gets them from its first writer (whose COMMIT the writers beside it then wait for, once, as
for any head ledger_post() creates). Nothing else changes: ledger_post(), the chains' rows and their hashes
are as they were.

Revision ID: 0019_ledger_take_chain
Revises: 0018_game_log
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0019_ledger_take_chain"
down_revision = "0018_game_log"
branch_labels = None
depends_on = None

LEDGER_TAKE_CHAIN = """
CREATE OR REPLACE FUNCTION ledger_take_chain(p_tenant_id text, p_preferred smallint) RETURNS smallint
LANGUAGE plpgsql AS $$
DECLARE
    v_chain smallint;
BEGIN
    -- LEDGER_CHAINS = 16 (pokna_verify.ledger.chain; the CHECK on ledger_head.chain).
    SELECT chain INTO v_chain FROM ledger_head WHERE tenant_id = p_tenant_id
        ORDER BY (chain + 16 - p_preferred) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        RETURN v_chain;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM tenant WHERE id = p_tenant_id) THEN
        RETURN p_preferred;
    END IF;
    -- Every head there is, is taken (or there is none yet): the missing ones are made. Then a second look in a
    -- snapshot of its own, whether or not this writer made any: another writer may have committed the
    -- tenant's heads between the first look and the count.
    IF (SELECT count(*) FROM ledger_head WHERE tenant_id = p_tenant_id) < 16 THEN
        FOR v_missing IN 0 .. 15 LOOP
            INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash)
                VALUES (p_tenant_id, v_missing, 0, '0000000000000000000000000000000000000000000000000000000000000000')
                ON CONFLICT (tenant_id, chain) DO NOTHING;
        END LOOP;
    END IF;
    SELECT chain INTO v_chain FROM ledger_head WHERE tenant_id = p_tenant_id
        ORDER BY (chain + 16 - p_preferred) % 16 LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        RETURN v_chain;
    END IF;
    PERFORM 1 FROM ledger_head WHERE tenant_id = p_tenant_id AND chain = p_preferred FOR UPDATE;
    RETURN p_preferred;
END
$$"""


HEADS = """
INSERT INTO ledger_head (tenant_id, chain, last_seq, last_hash)
SELECT tenant.id, chain, 0, repeat('0', 64) FROM tenant CROSS JOIN generate_series(0, 15) AS chain
ON CONFLICT (tenant_id, chain) DO NOTHING
"""


def upgrade() -> None:
    op.execute(LEDGER_TAKE_CHAIN)
    op.execute(HEADS)


def downgrade() -> None:
    """The function goes; the heads stay (a head at seq 0 is one ledger_post() could have made)."""
    op.execute("DROP FUNCTION ledger_take_chain(text, smallint)")
