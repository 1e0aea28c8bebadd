-- Revert call_timeout_reaper:tables/call_sessions_autovacuum from pg
-- Resets each option the deploy recorded as the reaper's and that still holds the reaper's
-- value: a value the messenger service set since stays, the reaper's goes with the reaper.

BEGIN;

DO $$
DECLARE
    v_ours    text[] := ARRAY(SELECT f.item FROM messenger.call_reaper_footprint AS f
                               WHERE f.kind = 'reloption' AND f.target = 'TABLE messenger.call_sessions');
    v_options text[] := (SELECT c.reloptions FROM pg_catalog.pg_class AS c
                          WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass AND c.relkind = 'r');
    v_reset   text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(pg_catalog.split_part(o.option, '=', 1)), ', ')
      INTO v_reset
      FROM pg_catalog.unnest(v_ours) AS o (option)
     WHERE o.option = ANY (v_options);
    IF v_reset IS NOT NULL THEN
        EXECUTE pg_catalog.format('ALTER TABLE messenger.call_sessions RESET (%s)', v_reset);
    END IF;
    DELETE FROM messenger.call_reaper_footprint
     WHERE kind = 'reloption' AND target = 'TABLE messenger.call_sessions';
END
$$;

COMMIT;
