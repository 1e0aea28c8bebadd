-- Deploy call_timeout_reaper:tables/call_reaper_lock_holders to pg
-- The backends the lock warden (messenger._end_stale_call_reaper_lock) has seen holding the
-- reaper's single-runner lock, one row each while they hold it: PostgreSQL records when a lock
-- was granted nowhere (pg_locks.waitstart is for waiters only), and a session-level holder's
-- pg_stat_activity times say nothing about its lock (xact_start is NULL when idle and restarts
-- with each transaction), so the warden writes down when it first saw each holder.
--   pid, backend_start  identify the backend (a pid is reused by a later backend);
--   role_name           its role when first seen;
--   held_since          held since, as best known when first seen (see call_reaper_lock_holder);
--   warden_can_end      whether the check that saw it may signal it (false for a superuser's
--                       backend when that check's role is not a superuser);
--   given_up            the warden found it past its bound and could not end it: logged and
--                       recorded in call_reaper_lock_takeovers once, not again every second.
-- A table of its own, not columns of the settings or takeovers: rows come and go with holders,
-- so the every-second check writes nothing while nobody holds the lock (an empty scan) or
-- while the same holder is seen again (a primary-key probe), and one row is inserted when a
-- holder is first seen and deleted when it is gone. At most a handful of rows ever exist.
-- SELECT for messenger_call_reaper_owner: call_reaper_metrics (SECURITY DEFINER) reads it.

BEGIN;

CREATE TABLE messenger.call_reaper_lock_holders (
    pid            integer     PRIMARY KEY,
    backend_start  timestamptz,
    role_name      name,
    held_since     timestamptz NOT NULL,
    warden_can_end boolean     NOT NULL,
    given_up       boolean     NOT NULL DEFAULT false,
    first_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE messenger.call_reaper_lock_holders IS
    'Backends the lock warden has seen holding the reaper''s single-runner lock, with when they have held it since (as first seen); a row goes when its backend no longer holds the lock.';

GRANT SELECT ON messenger.call_reaper_lock_holders TO messenger_call_reaper_owner;

COMMIT;
