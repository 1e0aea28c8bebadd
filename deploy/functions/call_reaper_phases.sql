-- Deploy call_timeout_reaper:functions/call_reaper_phases to pg

BEGIN;

-- messenger.call_reaper_phases() RETURNS TABLE (phase, status, new_status, end_reason,
--                                               outbox_kind, recipients, timeout_setting)
--
-- The phase rule, the one place it is written: what each phase selects, what it makes of a
-- call, whom it tells and how long it waits. The reaper's routines, the preview, the metrics,
-- the DBA scripts, the tests and the bench read it from here (recipients 'caller': one row to
-- the caller; 'both': one row per distinct party). timeout_setting names the column of
-- messenger.call_reaper_settings holding the phase's window, which is also the name of the
-- argument of reap_call_timeouts and preview_call_timeouts that overrides it; a reader with a
-- settings row takes the window as (to_jsonb(settings) ->> timeout_setting)::interval.
-- The due rule (which timestamp a phase counts from) is messenger.call_due_key, a function of
-- its own so that every reader of "due" inlines the same expression.
-- Rows are in phase order: the reaper runs ring_timeout first.
-- LANGUAGE sql, IMMUTABLE, no SET clause: callers' queries inline it as constants. EXECUTE
-- stays granted to PUBLIC: it reads nothing.
CREATE FUNCTION messenger.call_reaper_phases()
RETURNS TABLE (phase text, status text, new_status text, end_reason text, outbox_kind text, recipients text,
               timeout_setting text)
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
BEGIN ATOMIC
    SELECT *
      FROM (VALUES ('ring_timeout', 'Ringing', 'Missed', 'Timeout', 'CallMissed', 'caller', 'ring_timeout'),
                   ('stale_answered', 'Answered', 'Failed', 'Error', 'CallEnded', 'both', 'stale_timeout'))
           AS r (phase, status, new_status, end_reason, outbox_kind, recipients, timeout_setting);
END;

COMMENT ON FUNCTION messenger.call_reaper_phases() IS
$$The call-timeout reaper's phase rule: per phase the status it selects, the status and end_reason it sets, the outbox kind it writes to whom (caller, or both parties), and timeout_setting, the call_reaper_settings column (and reap_call_timeouts argument) holding its window. Usage: SELECT * FROM messenger.call_reaper_phases();$$;

COMMIT;
