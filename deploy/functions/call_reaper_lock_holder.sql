-- Deploy call_timeout_reaper:functions/call_reaper_lock_holder to pg

BEGIN;

-- messenger.call_reaper_lock_holder() RETURNS SETOF record
--
-- Who holds the reaper's single-runner lock (messenger.call_reaper_lock_key(), found in pg_locks
-- as that function's comment says) in this database, one row per holding backend (none when it
-- is free; one, unless someone took the shared form of the lock):
--   pid, backend_start, role_name, state, xact_start  the backend, from pg_stat_activity
--   is_cycle        it may be a running reaper cycle: its role may run one (EXECUTE on
--                   reap_call_timeouts, drain_call_timeouts, run_call_reaper_ticks or
--                   purge_call_reaper_history, the routines that take the lock) and it is
--                   executing a statement (state 'active', or not visible to this function's
--                   owner). A cycle holds the lock only inside its own transaction.
--   held_since      held since, as best known: a cycle's transaction start (its lock is
--                   released at its COMMIT, a drain's next cycle takes it anew); for any other
--                   holder when the warden first saw it (messenger.call_reaper_lock_holders),
--                   else its last state change if it is idle (an idle session took the lock in
--                   a statement that ended then), else its transaction start. NULL when nothing
--                   is known (no warden has seen it and its activity is not visible).
--   recorded        the warden has recorded it (a row of call_reaper_lock_holders)
--   warden_can_end  whether the warden check that recorded it may signal it; NULL if none has.
-- Read-only, takes no lock. SECURITY DEFINER, owned by the deploying role (which runs the
-- warden): pg_stat_activity shows another role's times only to a superuser, a member of
-- pg_read_all_stats or of that role, and the metrics function (owned by
-- messenger_call_reaper_owner, which is none of those) must see what the warden sees. It
-- returns these columns of the lock's holder only, never query text; EXECUTE is revoked from
-- PUBLIC and granted to messenger_call_reaper_owner.
CREATE OR REPLACE FUNCTION messenger.call_reaper_lock_holder(
    OUT pid            integer,
    OUT backend_start  timestamptz,
    OUT role_name      name,
    OUT state          text,
    OUT xact_start     timestamptz,
    OUT is_cycle       boolean,
    OUT held_since     timestamptz,
    OUT recorded       boolean,
    OUT warden_can_end boolean)
RETURNS SETOF record
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
SELECT l.pid, a.backend_start, r.rolname, a.state, a.xact_start, c.is_cycle,
       CASE WHEN c.is_cycle THEN a.xact_start
            ELSE coalesce(w.held_since,
                          CASE a.state WHEN 'idle' THEN a.state_change ELSE a.xact_start END)
       END,
       w.pid IS NOT NULL,
       w.warden_can_end
  FROM pg_catalog.pg_locks AS l
  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = a.usesysid
  LEFT JOIN messenger.call_reaper_lock_holders AS w
         ON w.pid = l.pid AND w.backend_start IS NOT DISTINCT FROM a.backend_start
 CROSS JOIN LATERAL (
        SELECT coalesce(a.state, 'active') = 'active'
               AND EXISTS (SELECT FROM pg_catalog.pg_proc AS p
                            WHERE p.pronamespace = 'messenger'::pg_catalog.regnamespace
                              AND p.proname IN ('reap_call_timeouts', 'drain_call_timeouts',
                                                'run_call_reaper_ticks', 'purge_call_reaper_history')
                              AND pg_catalog.has_function_privilege(a.usesysid, p.oid, 'EXECUTE'))
        ) AS c (is_cycle)
 WHERE l.locktype = 'advisory' AND l.granted
   AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d
                      WHERE d.datname = pg_catalog.current_database())
   AND (l.classid::bigint << 32 | l.objid::bigint) = messenger.call_reaper_lock_key()
   AND l.objsubid = 1
$$;

COMMENT ON FUNCTION messenger.call_reaper_lock_holder() IS
$$Who holds the call-timeout reaper's single-runner lock: pid, backend_start, role, state, transaction start, whether it may be a running cycle, held since (best known: a cycle's transaction start; otherwise when the lock warden first saw it, else the last state change of an idle session, else its transaction start), whether the warden recorded it and may end it. Read by the warden, call_reaper_status and call_reaper_metrics.$$;
REVOKE ALL ON FUNCTION messenger.call_reaper_lock_holder() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION messenger.call_reaper_lock_holder() TO messenger_call_reaper_owner;

COMMIT;
