"""The beacon fairness mode's rows: a drawing action accepted and waiting for its drand round, the round each
roll used, and the wallets a waiting roll holds.

- `game.pending_roll`: the accepted action, the time it was accepted, the round it draws, the balances the
  rules will decide it on and the signed acceptance the player was given. Set when a drawing action is
  accepted (committed before anyone can know the round), cleared when the round arrives and the action is
  resolved with it.
- `game_roll.accepted_at` and `game_roll.beacon` (`{round, randomness, signature}`): what the proof shows of
  each beacon-mode roll. Both null in the default mode.
- `tenant.fairness_mode`: the mode of a new game whose request names none (`stake` unless set).
- `account.roll_hold_game_id`: while a game's roll waits, no money may leave its seated wallets by any other
  way (a withdrawal, another game), or a player holding the server seed could see the round arrive, compute
  the roll, and make the waiting action fail for want of funds: a roll voided at will. The trigger refuses
  any balance decrease of a held wallet (SQLSTATE PK423); the resolution releases the hold before it posts.

Revision ID: 0013_beacon_rolls
Revises: 0012_head_last
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_beacon_rolls"
down_revision = "0012_head_last"
branch_labels = None
depends_on = None

REFUSE_HELD_DEBIT = """
CREATE FUNCTION ledger_refuse_held_debit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PK423',
        MESSAGE = 'wallet ' || OLD.id || ' is held by game ' || NEW.roll_hold_game_id
            || ' until its accepted roll is resolved',
        DETAIL = json_build_object('account_id', OLD.id, 'game_id', NEW.roll_hold_game_id)::text;
END
$$
"""

# One call per phase, each a statement of the action's transaction (pokna.dealer.beacon_rolls):
# 'accept', after game_write(), records the pending roll and holds the seated wallets: PK423 if one is held by
# another game's waiting roll; PK409 (decide again, as for a moved wallet) if a wallet's balance is not the
# one the action was accepted on; PK425 (decide again once it is due) if the named round would be due
# before this commits. 'release' clears
# both, before game_write() posts the resolution. 'rolls' records the round of each roll game_write()
# inserted, after it.
BEACON_ROLL_WRITE = """
CREATE FUNCTION beacon_roll_write(p_tenant_id text, p_game_id text, p_phase text, p_write jsonb)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_account record;
BEGIN
    IF p_phase = 'accept' THEN
        -- The named round must not be out before this acceptance commits (COMMIT follows in the same round
        -- trip): within 50 ms of its due time, PK425, and the request is decided again once it is due,
        -- naming the next round.
        IF clock_timestamp() > (p_write->>'round_due_at')::timestamptz - interval '50 milliseconds' THEN
            RAISE EXCEPTION USING ERRCODE = 'PK425',
                MESSAGE = 'beacon_roll_write: the acceptance would commit after its round is due';
        END IF;
        -- The seats' wallets under their row locks: still the balances the action is accepted on (else it is
        -- decided again, as for a posting), and held by no other game's waiting roll.
        FOR v_account IN SELECT id, balance, roll_hold_game_id FROM account
            WHERE tenant_id = p_tenant_id AND id IN (SELECT jsonb_array_elements_text(p_write->'account_ids'))
            ORDER BY id FOR UPDATE
        LOOP
            IF v_account.roll_hold_game_id IS NOT NULL AND v_account.roll_hold_game_id <> p_game_id THEN
                RAISE EXCEPTION USING ERRCODE = 'PK423',
                    MESSAGE = 'wallet ' || v_account.id || ' is held by game ' || v_account.roll_hold_game_id
                        || ' until its accepted roll is resolved',
                    DETAIL = json_build_object('account_id', v_account.id,
                        'game_id', v_account.roll_hold_game_id)::text;
            END IF;
            IF v_account.balance <> (p_write->'balances'->>v_account.id)::bigint THEN
                RAISE EXCEPTION USING ERRCODE = 'PK409',
                    MESSAGE = 'beacon_roll_write: wallet ' || v_account.id || ' moved since the game was read';
            END IF;
        END LOOP;
        UPDATE account SET roll_hold_game_id = p_game_id
        WHERE tenant_id = p_tenant_id AND id IN (SELECT jsonb_array_elements_text(p_write->'account_ids'));
        UPDATE game SET pending_roll = (p_write->'pending_roll')::json WHERE tenant_id = p_tenant_id AND id = p_game_id;
    ELSIF p_phase = 'release' THEN
        UPDATE account SET roll_hold_game_id = NULL
        WHERE tenant_id = p_tenant_id AND roll_hold_game_id = p_game_id
            AND id IN (SELECT jsonb_array_elements_text(p_write->'account_ids'));
        UPDATE game SET pending_roll = NULL WHERE tenant_id = p_tenant_id AND id = p_game_id;
    ELSIF p_phase = 'rolls' THEN
        UPDATE game_roll SET accepted_at = recorded.accepted_at, beacon = recorded.beacon::json
        FROM jsonb_to_recordset(p_write->'rolls') AS recorded(nonce int, accepted_at text, beacon jsonb)
        WHERE game_roll.tenant_id = p_tenant_id AND game_roll.game_id = p_game_id
            AND game_roll.nonce = recorded.nonce;
    ELSE
        RAISE EXCEPTION 'beacon_roll_write: unknown phase %', p_phase;
    END IF;
END
$$
"""


def upgrade() -> None:
    op.add_column(
        "tenant",
        sa.Column("fairness_mode", sa.String(length=16), server_default=sa.text("'stake'"), nullable=False),
    )
    op.create_check_constraint("fairness_mode_known", "tenant", "fairness_mode IN ('stake', 'beacon')")
    op.add_column("game", sa.Column("pending_roll", sa.JSON(), nullable=True))
    op.add_column("game_roll", sa.Column("accepted_at", sa.String(length=24), nullable=True))
    op.add_column("game_roll", sa.Column("beacon", sa.JSON(), nullable=True))
    op.add_column("account", sa.Column("roll_hold_game_id", sa.String(length=40), nullable=True))
    op.execute(REFUSE_HELD_DEBIT)
    op.execute(
        "CREATE TRIGGER trg_account_roll_hold BEFORE UPDATE OF balance ON account FOR EACH ROW "
        "WHEN (NEW.roll_hold_game_id IS NOT NULL AND NEW.balance < OLD.balance) "
        "EXECUTE FUNCTION ledger_refuse_held_debit()"
    )
    op.execute(BEACON_ROLL_WRITE)


def downgrade() -> None:
    op.execute("DROP FUNCTION IF EXISTS beacon_roll_write(text, text, text, jsonb)")
    op.execute("DROP TRIGGER IF EXISTS trg_account_roll_hold ON account")
    op.execute("DROP FUNCTION IF EXISTS ledger_refuse_held_debit()")
    op.drop_column("account", "roll_hold_game_id")
    op.drop_column("game_roll", "beacon")
    op.drop_column("game_roll", "accepted_at")
    op.drop_column("game", "pending_roll")
    op.drop_constraint("fairness_mode_known", "tenant", type_="check")
    op.drop_column("tenant", "fairness_mode")
