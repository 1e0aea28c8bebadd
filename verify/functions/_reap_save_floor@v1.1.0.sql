-- Verify call_timeout_reaper:functions/_reap_save_floor on pg

BEGIN;

SELECT 'messenger._reap_save_floor(text, timestamptz, uuid, timestamptz, uuid, boolean, boolean, timestamptz, boolean, bigint, bigint, uuid, timestamptz)'::regprocedure;

ROLLBACK;
