-- Verify call_timeout_reaper:tables/call_sessions_autovacuum on pg
-- A plain call_sessions has a vacuum scale factor and threshold: the deploy's, or the messenger
-- service's own that it kept.

BEGIN;

DO $$
DECLARE
    v_kind    "char";
    v_options text[];
BEGIN
    SELECT c.relkind, c.reloptions INTO v_kind, v_options
      FROM pg_catalog.pg_class AS c
     WHERE c.oid = 'messenger.call_sessions'::regclass;
    IF v_kind = 'r' AND NOT EXISTS (SELECT FROM pg_catalog.unnest(v_options) AS o (option)
                                     WHERE o.option LIKE 'autovacuum\_vacuum\_scale\_factor=%'
                                        OR o.option LIKE 'autovacuum\_vacuum\_threshold=%') THEN
        RAISE EXCEPTION 'messenger.call_sessions has no autovacuum settings (reloptions %)', v_options;
    END IF;
END
$$;

ROLLBACK;
