DROP FUNCTION IF EXISTS repro_touch(int, int);
DROP TABLE IF EXISTS repro_items;
