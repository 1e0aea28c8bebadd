-- Verify call_timeout_reaper:functions/call_is_due on pg
-- The rule on each side of each boundary, for a text status (the enum and varchar stand-ins
-- are pgTAP's call_is_due.sql).

BEGIN;

DO $$
BEGIN
    IF NOT (messenger.call_is_due('Ringing'::text, '2000-01-01 00:00', '2000-01-01 05:00', '2000-01-01 00:00')
            AND NOT messenger.call_is_due('Ringing'::text, '2000-01-01 00:01', '2000-01-01 00:01', '2000-01-01 00:00')
            AND messenger.call_is_due('Answered'::text, '2000-01-01 00:00', '2000-01-01 00:00', '2000-01-01 00:00')
            AND NOT messenger.call_is_due('Answered'::text, '2000-01-01 00:00', '2000-01-01 00:01', '2000-01-01 00:00')
            AND NOT messenger.call_is_due('Ended'::text, '2000-01-01 00:00', '2000-01-01 00:00', '2000-01-01 00:00')) THEN
        RAISE EXCEPTION 'messenger.call_is_due does not hold the due rule';
    END IF;
END
$$;

ROLLBACK;
