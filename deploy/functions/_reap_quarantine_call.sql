-- Deploy call_timeout_reaper:functions/_reap_quarantine_call to pg

BEGIN;

-- Contract: records that one call failed alone in a phase (p_sqlstate, p_message) and logs it.
-- A first failure waits p_backoff before its retry; each further one doubles the wait, up to
-- p_backoff_max. The call itself is left as it is: active, for a later cycle.
-- Log: one WARNING event=call_poisoned with the call id, SQLSTATE and the message as a JSON
-- string (the line stays key=value); the error's DETAIL, which can carry row values, never.
CREATE OR REPLACE FUNCTION messenger._reap_quarantine_call(
    p_call_id     uuid,
    p_phase       text,
    p_sqlstate    text,
    p_message     text,
    p_run_id      uuid,
    p_as_of       timestamptz,
    p_backoff     interval,
    p_backoff_max interval)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO messenger.call_reaper_quarantine AS q
           (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at,
            last_sqlstate, last_message, last_run_id)
    VALUES (p_call_id, p_phase, 1, p_as_of, p_as_of, p_as_of + p_backoff,
            p_sqlstate, p_message, p_run_id)
    ON CONFLICT ON CONSTRAINT call_reaper_quarantine_pkey DO UPDATE
       SET phase           = EXCLUDED.phase,
           attempts        = q.attempts + 1,
           last_failed_at  = EXCLUDED.last_failed_at,
           next_attempt_at = EXCLUDED.last_failed_at
                             + least(p_backoff * power(2, least(q.attempts, 20)), p_backoff_max),
           last_sqlstate   = EXCLUDED.last_sqlstate,
           last_message    = EXCLUDED.last_message,
           last_run_id     = EXCLUDED.last_run_id;
    RAISE WARNING 'call_reaper event=call_poisoned run_id=% phase=% call_id=% sqlstate=% message=%',
        p_run_id, p_phase, p_call_id, p_sqlstate, to_json(p_message);
END
$$;

COMMENT ON FUNCTION messenger._reap_quarantine_call(uuid, text, text, text, uuid, timestamptz, interval, interval) IS
    'Private: quarantine one poison call with a doubling backoff and log it (no DETAIL).';
REVOKE ALL ON FUNCTION messenger._reap_quarantine_call(uuid, text, text, text, uuid, timestamptz, interval, interval) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_quarantine_call(uuid, text, text, text, uuid, timestamptz, interval, interval)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
