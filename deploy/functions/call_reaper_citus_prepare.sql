-- Deploy call_timeout_reaper:functions/call_reaper_citus_prepare to pg

BEGIN;

-- messenger.call_reaper_citus_prepare()
--
-- Contract: makes every worker of a Citus cluster ready for the coordinator's fan-out
-- (messenger._reap_fanout): on each worker, the reaper's tables that a pair's cycle reads or
-- writes there (call_reaper_quarantine, which the claims skip and poison fills; call_reaper_settings,
-- whose allow_future_as_of the option check reads; call_reaper_claim_floor, a row type the lanes
-- declare and each shard pair's floor is kept in) as local tables of the coordinator's definition,
-- the quarantine with its triggers (a released call resets the worker's floors), the others
-- without theirs (the settings guard reschedules the coordinator's job), the settings row
-- copied from the coordinator's, and USAGE on the outbox id's sequence for the owner (Citus does
-- not carry that grant to the workers). Idempotent: a worker that has the tables keeps their rows
-- and gets the settings row again. Run it once after the service distributed its tables, and again
-- after adding a worker or changing the settings the workers read. One row per worker: whether it
-- took, and the error if not.
-- The worker tables are the reaper's by a comment that names this routine, so the revert drops
-- exactly those and nothing a worker holds under the same names.
-- Errors: 55000 without Citus, when messenger.call_sessions is not distributed or
-- messenger.realtime_outbox is not colocated with it, and when the owner cannot log in (Citus
-- reaches the workers as the cycle's owner: ALTER ROLE messenger_call_reaper_owner LOGIN).
-- SECURITY INVOKER: it creates on the workers as the caller (a DBA who may create in the
-- messenger schema there and grant on the sequence), never as the reaper.
CREATE FUNCTION messenger.call_reaper_citus_prepare()
RETURNS TABLE (node text, success boolean, result text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
-- It writes on the workers (run_command_on_workers), which plpgsql_check cannot see:
-- @plpgsql_check_options: performance_warnings = false
DECLARE
    c_mark constant text := 'the reaper''s worker copy (messenger.call_reaper_citus_prepare)';
    v_colocated boolean := false;
    v_body  text := '';
    v_ddl   text;
    v_table text;
    v_rows  jsonb;
BEGIN
    -- The Citus catalogs and routines exist only where Citus does; plpgsql_check parses a
    -- constant EXECUTE against the server it runs on.
    PERFORM 'PRAGMA:disable:check';
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE $q$SELECT count(DISTINCT p.colocationid) = 1 AND count(*) = 2 AND bool_and(p.partmethod = 'h')
                     FROM pg_catalog.pg_dist_partition AS p
                    WHERE p.logicalrelid IN ('messenger.call_sessions'::regclass, 'messenger.realtime_outbox'::regclass)$q$
           INTO v_colocated;
    END IF;
    IF NOT v_colocated THEN
        RAISE EXCEPTION 'messenger.call_reaper_citus_prepare needs a Citus coordinator with messenger.call_sessions and messenger.realtime_outbox distributed and colocated'
            USING ERRCODE = '55000',
                  HINT = 'create_distributed_table(''messenger.call_sessions'', ''call_id''), then create_distributed_table(''messenger.realtime_outbox'', ''reference_id'', colocate_with => ''messenger.call_sessions''); see docs/citus.md.';
    END IF;
    IF NOT (SELECT r.rolcanlogin FROM pg_catalog.pg_roles AS r WHERE r.rolname = 'messenger_call_reaper_owner') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner cannot log in, so Citus cannot reach the workers as it'
            USING ERRCODE = '55000',
                  HINT = 'ALTER ROLE messenger_call_reaper_owner LOGIN (no password: the workers admit it by the cluster''s own node authentication); see docs/citus.md.';
    END IF;
    FOREACH v_table IN ARRAY ARRAY['messenger.call_reaper_quarantine', 'messenger.call_reaper_settings',
                                   'messenger.call_reaper_claim_floor'] LOOP
        -- The coordinator's own definition (columns, checks, keys, indexes, owner, grants), as
        -- Citus gives it for a shard; of the triggers only the quarantine's.
        EXECUTE $q$SELECT string_agg(format('EXECUTE %L;', e), ' ')
                     FROM pg_catalog.master_get_table_ddl_events($1) AS e
                    WHERE $2 OR e !~ '^(CREATE TRIGGER|ALTER TABLE .* (ENABLE|DISABLE) TRIGGER)'$q$
           INTO v_ddl USING v_table, v_table = 'messenger.call_reaper_quarantine';
        v_body := v_body || format('IF pg_catalog.to_regclass(%L) IS NULL THEN %s EXECUTE %L; END IF; ',
                                   v_table, v_ddl, format('COMMENT ON TABLE %s IS %L', v_table, c_mark));
    END LOOP;
    v_body := v_body
        || 'DELETE FROM messenger.call_reaper_settings; '
        || format('INSERT INTO messenger.call_reaper_settings SELECT * FROM pg_catalog.jsonb_populate_record(NULL::messenger.call_reaper_settings, %L); ',
                  (SELECT to_jsonb(s) FROM messenger.call_reaper_settings AS s))
        || format('GRANT USAGE ON SEQUENCE %s TO messenger_call_reaper_owner; ',
                  pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id'));
    EXECUTE 'SELECT pg_catalog.jsonb_agg(w) FROM pg_catalog.run_command_on_workers($1, false) AS w'
       INTO v_rows
      USING format('DO %L', 'BEGIN ' || v_body || 'END');
    PERFORM 'PRAGMA:enable:check';
    RETURN QUERY
        SELECT w.nodename || ':' || w.nodeport, w.success, w.result
          FROM jsonb_to_recordset(coalesce(v_rows, '[]'::jsonb)) AS w (nodename text, nodeport integer, success boolean, result text)
         ORDER BY 1;
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_citus_prepare() IS
    'Makes every Citus worker ready for the reaper''s fan-out: its local quarantine, settings and claim-floor tables, the outbox sequence grant. One row per worker. 55000 without Citus or when the owner cannot log in.';
REVOKE ALL ON FUNCTION messenger.call_reaper_citus_prepare() FROM PUBLIC;

COMMIT;
