-- ledger_refuse_held_debit(): trigger trg_account_roll_hold, BEFORE UPDATE OF balance ON account, for a
-- wallet held by a beacon-mode game's waiting roll whose balance would decrease: refused with SQLSTATE PK423,
-- the account and the holding game as JSON in the detail (pokna.errors: a 409 wallet_held). No money leaves a
-- held wallet by any other way until the roll is resolved.
--
-- Last set by migrations/versions/0013_beacon_rolls.py, which created it and its trigger.
--
-- This file is the function as the database holds it at the head migration, with its triggers. To change it,
-- edit this file and write a new migration that applies a frozen copy of the new text (a migration never
-- reads this file: history must not move when the source does). tests/db/test_sql_source.py fails while the
-- database and this file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION ledger_refuse_held_debit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PK423',
        MESSAGE = 'wallet ' || OLD.id || ' is held by game ' || NEW.roll_hold_game_id
            || ' until its accepted roll is resolved',
        DETAIL = json_build_object('account_id', OLD.id, 'game_id', NEW.roll_hold_game_id)::text;
END
$$;

CREATE TRIGGER trg_account_roll_hold BEFORE UPDATE OF balance ON account FOR EACH ROW
    WHEN (NEW.roll_hold_game_id IS NOT NULL AND NEW.balance < OLD.balance)
    EXECUTE FUNCTION ledger_refuse_held_debit();
