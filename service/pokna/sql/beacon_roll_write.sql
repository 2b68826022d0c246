-- beacon_roll_write(tenant, game, phase, write jsonb): a beacon-mode game's rows, one phase per call.
-- 'accept': refuses (PK425) an acceptance that would commit within 50 ms of its round's due time; locks the
-- seats' wallets by ascending id, refuses a wallet held by another game's waiting roll (PK423) or whose
-- balance moved since the game was read (PK409); then holds the wallets for this game and stores its pending
-- roll. 'release': frees the game's holds and clears its pending roll. 'rolls': records each roll's
-- acceptance time and beacon round. Called by pokna.dealer.writes (BEACON_ROLL_WRITE); on Citus it runs on
-- its tenant's worker (pokna.db.distribution).
--
-- Last set by migrations/versions/0013_beacon_rolls.py, which created it.
--
-- This file is the function as the database holds it at the head migration. To change it, edit this file and
-- write a new migration that applies a frozen copy of the new text (a migration never reads this file:
-- history must not move when the source does). tests/db/test_sql_source.py fails while the database and this
-- file disagree. docs/architecture.md, "The SQL in force".

CREATE OR REPLACE FUNCTION beacon_roll_write(p_tenant_id text, p_game_id text, p_phase text, p_write jsonb)
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
$$;
