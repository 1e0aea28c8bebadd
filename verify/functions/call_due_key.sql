-- Verify call_timeout_reaper:functions/call_due_key on pg

BEGIN;

DO $$
BEGIN
    IF messenger.call_due_key('Ringing'::text, '2100-01-01 00:00+00', '2100-01-01 01:00+00') IS DISTINCT FROM '2100-01-01 00:00+00'::timestamptz
       OR messenger.call_due_key('Answered'::text, '2100-01-01 00:00+00', '2100-01-01 01:00+00') IS DISTINCT FROM '2100-01-01 01:00+00'::timestamptz
       OR messenger.call_due_key('Missed'::text, '2100-01-01 00:00+00', '2100-01-01 01:00+00') IS NOT NULL THEN
        RAISE EXCEPTION 'messenger.call_due_key does not give the due keys of the reaper''s rule';
    END IF;
    IF (SELECT provolatile FROM pg_catalog.pg_proc
         WHERE oid = 'messenger.call_due_key(anyelement, timestamptz, timestamptz)'::regprocedure) <> 'i' THEN
        RAISE EXCEPTION 'messenger.call_due_key must be IMMUTABLE (the planner inlines it)';
    END IF;
END
$$;

ROLLBACK;
