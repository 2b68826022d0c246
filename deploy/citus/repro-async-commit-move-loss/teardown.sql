DROP TABLE IF EXISTS repro_ack, repro_b, repro_a;
