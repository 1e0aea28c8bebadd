-- Deploy call_timeout_reaper:functions/call_reaper_error_class to pg

BEGIN;

-- messenger.call_reaper_error_class(sqlstate text) RETURNS text
--
-- What an error raised while closing calls says, the one place the SQLSTATE classes are
-- listed:
--   'transient'  says nothing about the call: connection (08), deadlock or serialization (40),
--                privileges and undefined objects (42), resources (53), lock not available or
--                object in use (55), operator intervention (57), system (58), configuration
--                file (F0), internal (XX). The cycle re-raises it and rolls back whole; the
--                next cycle retries.
--   'data'       about the call's own data: data exceptions (22), integrity constraints (23),
--                a trigger's RAISE EXCEPTION (P0001). A call failing alone with it is poison.
--   'other'      any other state: poison when one call fails alone with it, but when every
--                call of a phase's batch fails alone with the same one, the error is not about
--                the calls and the cycle fails (see _reap_close).
-- LANGUAGE sql, IMMUTABLE: inlined. EXECUTE stays granted to PUBLIC: it reads nothing, and
-- tests and DBAs may ask how a state is classed.
CREATE OR REPLACE FUNCTION messenger.call_reaper_error_class(sqlstate text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN CASE
           WHEN left(sqlstate, 2) IN ('08', '40', '42', '53', '55', '57', '58', 'F0', 'XX') THEN 'transient'
           WHEN left(sqlstate, 2) IN ('22', '23') OR sqlstate = 'P0001' THEN 'data'
           ELSE 'other'
       END;

COMMENT ON FUNCTION messenger.call_reaper_error_class(text) IS
$$How the call-timeout reaper classes an error raised while closing calls: transient (cycle rolls back, next one retries), data (the call is poison) or other (poison alone; an error hitting every call of a batch fails the cycle).$$;

COMMIT;
