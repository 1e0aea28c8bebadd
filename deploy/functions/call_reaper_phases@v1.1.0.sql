-- Deploy call_timeout_reaper:functions/call_reaper_phases to pg

BEGIN;

-- messenger.call_reaper_phases() RETURNS TABLE (phase, status, new_status, end_reason,
--                                               outbox_kind, recipients)
--
-- The phase rule, the one place it is written: what each phase selects, what it makes of a
-- call and whom it tells. The reaper's routines, the preview, the tests and the bench read it
-- from here (recipients 'caller': one row to the caller; 'both': one row per distinct party).
-- The due rule (which timestamp a phase counts from) is messenger.call_due_key, and the index
-- ix_call_due is built on it, so it stays a separate function.
-- Rows are in phase order: the reaper runs ring_timeout first.
-- LANGUAGE sql, IMMUTABLE, no SET clause: callers' queries inline it as constants. EXECUTE
-- stays granted to PUBLIC: it reads nothing.
CREATE OR REPLACE FUNCTION messenger.call_reaper_phases()
RETURNS TABLE (phase text, status text, new_status text, end_reason text, outbox_kind text, recipients text)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT *
      FROM (VALUES ('ring_timeout', 'Ringing', 'Missed', 'Timeout', 'CallMissed', 'caller'),
                   ('stale_answered', 'Answered', 'Failed', 'Error', 'CallEnded', 'both'))
           AS r (phase, status, new_status, end_reason, outbox_kind, recipients);
END;

COMMENT ON FUNCTION messenger.call_reaper_phases() IS
$$The call-timeout reaper's phase rule: per phase the status it selects, the status and end_reason it sets and the outbox kind it writes to whom (caller, or both parties). Usage: SELECT * FROM messenger.call_reaper_phases();$$;

COMMIT;
