-- Verify call_timeout_reaper:tables/call_sessions on pg

BEGIN;

SELECT call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
       started_at, answered_at, ended_at, updated_at, duration_seconds
  FROM messenger.call_sessions
 WHERE false;

DO $$
BEGIN
    IF NOT coalesce((SELECT count(*) FROM pg_catalog.pg_constraint
                WHERE conrelid = 'messenger.call_sessions'::regclass AND contype = 'c') >= 7, false) THEN
        RAISE EXCEPTION 'call_sessions lost its invariant constraints';
    END IF;
END
$$;

ROLLBACK;
