-- Verify call_timeout_reaper:tables/call_sessions_autovacuum on pg

BEGIN;

DO $$
DECLARE
    v_kind    "char";
    v_options text[];
BEGIN
    SELECT c.relkind, c.reloptions INTO v_kind, v_options
      FROM pg_catalog.pg_class AS c
     WHERE c.oid = 'messenger.call_sessions'::regclass;
    IF v_kind = 'r' AND NOT coalesce(v_options @> ARRAY['autovacuum_vacuum_scale_factor=0.01',
                                                        'autovacuum_vacuum_threshold=1000'], false) THEN
        RAISE EXCEPTION 'messenger.call_sessions lacks its autovacuum settings (reloptions %)', v_options;
    END IF;
END
$$;

ROLLBACK;
