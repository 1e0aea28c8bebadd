-- Revert call_timeout_reaper:grants/call_reaper_operator from pg
-- Exactly the deploy's grants: the role itself goes (or, adopted, stays) with its own change.

BEGIN;

REVOKE EXECUTE ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz),
                           messenger._reap_cycle(integer, interval, interval, timestamptz, uuid),
                           messenger.preview_call_timeouts(integer, interval, interval, timestamptz),
                           messenger.pause_call_reaper(),
                           messenger.resume_call_reaper(),
                           messenger._check_reaper_options(integer, interval, interval, timestamptz),
                           messenger._check_reaper_duration(text, interval, interval, interval),
                          messenger.call_reaper_metrics()
    FROM messenger_call_reaper_operator;
REVOKE EXECUTE ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz),
                            messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint)
    FROM messenger_call_reaper_operator;
REVOKE ALL ON messenger.call_reaper_settings, messenger.call_reaper_runs, messenger.call_reaper_lock_takeovers,
              messenger.call_reaper_quarantine
    FROM messenger_call_reaper_operator;

COMMIT;
