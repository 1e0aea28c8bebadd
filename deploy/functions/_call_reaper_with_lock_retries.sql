-- Deploy call_timeout_reaper:functions/_call_reaper_with_lock_retries to pg

BEGIN;

-- messenger._call_reaper_with_lock_retries(statement)
--
-- Runs one DDL statement that must lock a product table (CREATE INDEX ... ON ONLY, ALTER INDEX
-- ... ATTACH PARTITION, DROP INDEX of a partitioned index: none can be done concurrently)
-- under lock_timeout = 100 ms, in a subtransaction, and tries again after a pause whenever the
-- lock was not granted in time (GitLab's with_lock_retries). A lock request that waits queues
-- every later writer behind it: bounded at 100 ms, no product writer waits longer than that,
-- however long the transaction in the way runs. Gives up after 600 tries (about two minutes:
-- 100 ms waits and 100-300 ms pauses) with SQLSTATE 55P03 and changes nothing.
-- The statement comes from the reaper's own Sqitch scripts (format() with %I/%s of catalog
-- names), run as the deploying role; EXECUTE is revoked from PUBLIC.
CREATE FUNCTION messenger._call_reaper_with_lock_retries(p_statement text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- The statement is SQL by design (the deploy's own DDL, built with format() from catalog names):
-- @plpgsql_check_options: security_warnings = false
DECLARE
    c_tries constant integer := 600;
    v_was   constant text := pg_catalog.current_setting('lock_timeout');
BEGIN
    FOR v_try IN 1 .. c_tries LOOP
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', '100ms', true);
            EXECUTE p_statement;
            PERFORM pg_catalog.set_config('lock_timeout', v_was, true);
            RETURN v_try;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_catalog.pg_sleep(0.1 + 0.2 * pg_catalog.random());
        END;
    END LOOP;
    RAISE EXCEPTION 'no lock within 100 ms in % tries for: %', c_tries, p_statement
        USING ERRCODE = '55P03',
              HINT = 'A long transaction keeps the table locked: run sqitch again once it has ended.';
END
$$;

REVOKE EXECUTE ON FUNCTION messenger._call_reaper_with_lock_retries(text) FROM PUBLIC;

COMMENT ON FUNCTION messenger._call_reaper_with_lock_retries(text) IS
$$Runs one DDL statement on a product table with lock_timeout 100 ms, retried after a pause up to 600 times (55P03 then): no product writer queues more than about 100 ms behind the reaper's deploy or revert.$$;

COMMIT;
