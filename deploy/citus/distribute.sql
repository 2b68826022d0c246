-- Generated from pokna.db.distribution.citus_script(); tests/db/test_distribution_ready.py
-- fails when this file and the map disagree. Run on the coordinator, after `pokna db upgrade`,
-- once, in one transaction (docs/scaling.md).
BEGIN;
-- The ledger's triggers touch only rows of their own tenant, so of their own shard.
SET LOCAL citus.enable_unsafe_triggers TO on;
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';
SELECT create_reference_table('tenant');
SELECT create_reference_table('api_key');
SELECT create_reference_table('game_link');
SELECT create_distributed_table('journal_transaction', 'tenant_id');
SELECT create_distributed_table('account', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('posting', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('ledger_head', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('ledger_checkpoint', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('game_table', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('game', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('game_seat', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('game_event', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('game_roll', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('idempotency_record', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('webhook_event', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('webhook_endpoint', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_table('webhook_delivery', 'tenant_id', colocate_with => 'journal_transaction');
SELECT create_distributed_function('ledger_post(text, jsonb)', 'p_tenant_id', colocate_with => 'journal_transaction', force_delegation => true);
SELECT create_distributed_function('game_write(text, json)', 'p_tenant_id', colocate_with => 'journal_transaction', force_delegation => true);
SELECT create_distributed_function('ledger_move(text, json)', 'p_tenant_id', colocate_with => 'journal_transaction', force_delegation => true);
SELECT create_distributed_function('beacon_roll_write(text, text, text, jsonb)', 'p_tenant_id', colocate_with => 'journal_transaction', force_delegation => true);
COMMIT;
