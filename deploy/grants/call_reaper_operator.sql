-- Deploy call_timeout_reaper:grants/call_reaper_operator to pg
-- The operator role's rights, all on the reaper's own objects. The verbs that change calls
-- (a cycle, a tick, a drain) run as the SECURITY DEFINER owner by the reaper's rules, so an
-- operator needs no right on messenger.call_sessions or messenger.realtime_outbox. Two verbs
-- keep running with the caller's own rights, by design: preview_call_timeouts lists call ids
-- (it needs the service's SELECT on call_sessions, which only the service grants), and
-- call_reaper_status reads cron.job and pg_stat_activity (pg_cron shows a role its own jobs only,
-- pg_read_all_stats shows other sessions): it is left to the deploying role, since an operator
-- gets nothing of schema cron. Pause and resume change the flag with the caller's rights, so the
-- settings guard (a trigger that runs as the updater) needs the two validators it calls.
-- Planned after every routine it grants on: a rework that re-creates one of them (DROP +
-- CREATE) must grant it again.

BEGIN;

GRANT EXECUTE ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz),
                          messenger._reap_cycle(integer, interval, interval, timestamptz, uuid),
                          messenger.preview_call_timeouts(integer, interval, interval, timestamptz),
                          messenger.pause_call_reaper(),
                          messenger.resume_call_reaper(),
                          messenger._check_reaper_options(integer, interval, interval, timestamptz),
                          messenger._check_reaper_duration(text, interval, interval, interval),
                          messenger.call_reaper_metrics()
    TO messenger_call_reaper_operator;
GRANT EXECUTE ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz),
                           messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint)
    TO messenger_call_reaper_operator;
-- Pause and resume set the flag with the caller's rights; the other options stay the
-- deploying role's (allow_future_as_of above all).
GRANT SELECT, UPDATE (paused) ON messenger.call_reaper_settings TO messenger_call_reaper_operator;
GRANT SELECT ON messenger.call_reaper_runs, messenger.call_reaper_lock_takeovers TO messenger_call_reaper_operator;
-- Releasing a poison call (sql/release_quarantined_call.sql) is deleting its quarantine row.
GRANT SELECT, DELETE ON messenger.call_reaper_quarantine TO messenger_call_reaper_operator;

COMMIT;
