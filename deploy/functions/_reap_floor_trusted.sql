-- Deploy call_timeout_reaper:functions/_reap_floor_trusted to pg

BEGIN;

-- Contract: whether a cycle may start a phase's backlog lane at p_floor, the phase's stored
-- claim floor (messenger.call_reaper_claim_floor; a row of NULLs when there is none), read-only.
-- The floor is a hint: it is trusted only when every check holds, each one comparison or one
-- primary-key probe (docs/design.md, "The claim floor"):
--   (a) the cycle's as_of is later than the as_of of the cycle that set it, or equal when the
--       cycle is the next one of the setter's drain or catch-up loop (p_run.after_run is the
--       setter's run id): a test or a DBA repeating an as_of may have written calls below it at
--       that very instant;
--   (b) the cycle's as_of is less than p_run.backoff_max past the floor's reset_at: what a
--       floor can hide waits that long at most;
--   (c) the call it was set at (its anchor) still exists: TRUNCATE, DELETE or a restore changed
--       what lies below it otherwise;
--   (d) call_sessions has not been vacuumed since (p_vacuums is its VACUUM count now): VACUUM
--       removed the dead entries it steps over, so it saves nothing any more;
--   (e) for the Ringing phase nothing more: its key (started_at) alone says when a call is
--       due. For the stale-answered phase, the cycle's cutoff (as_of - timeout) is before the
--       floor's talking_since minus p_run.fresh. An Answered call is due by updated_at, which
--       ix_call_due does not order, so below a floor may lie calls still talking. Every
--       Answered call below it is one of: closed or quarantined by the reaper (the floor never
--       passes a call it passed row-locked or left untried); one the storing lanes walked and
--       found not due, whose updated_at >= talking_since; or one answered (or committed)
--       after the storing cycle looked, whose updated_at is at or after that cycle's as_of and
--       clock, both >= talking_since, less the late commits the fresh window allows for. Since
--       updated_at only grows while a call is active (assumed: the service never sets it
--       back), none of them is due at a cutoff before talking_since - fresh. Past that, the lane
--       starts from the beginning once and stores a new floor (messenger._reap_save_floor).
--       A row without talking_since (an older release's) is never trusted for that phase.
-- p_floor is the stored row (messenger.call_reaper_claim_floor, a row of NULLs when there is
-- none) as a record: a parameter of a table's row type would keep Citus from creating this
-- function on the workers, whose shard pairs keep floors of their own (p_run.calls, the pair's
-- calls relation, is where check (c) looks: the static statement on the default pair, the same
-- text through EXECUTE on another).
-- The floor's other rules: messenger._reap_save_floor (where it stops, whether it is kept or
-- swept) and the trigger function messenger._call_reaper_quarantine_released (a released call
-- below it resets it). Called by messenger._reap_lanes; runs with messenger._reap_pair's
-- planner settings (generic plans), like every routine of the cycle.
CREATE FUNCTION messenger._reap_floor_trusted(
    p_run     messenger.call_reaper_phase_run,
    p_floor   record,
    p_vacuums bigint)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_anchored boolean;
BEGIN
    PERFORM 'PRAGMA:TYPE:p_floor messenger.call_reaper_claim_floor';
    -- Never NULL: a cycle from no loop (after_run NULL) at the setter's as_of is a plain no.
    IF NOT coalesce(p_floor.phase IS NOT NULL
        AND (p_floor.phase IN (SELECT r.phase FROM messenger.call_reaper_phases() AS r WHERE r.status = 'Ringing')
             OR coalesce(p_run.as_of - p_run.timeout < p_floor.talking_since - p_run.fresh, false))
        AND (p_run.as_of > p_floor.as_of
             OR (p_run.as_of = p_floor.as_of AND coalesce(p_floor.run_id = p_run.after_run, false)))
        AND p_run.as_of < p_floor.reset_at + p_run.backoff_max
        AND p_floor.vacuums = p_vacuums, false) THEN
        RETURN false;
    END IF;
    IF p_run.calls = 'messenger.call_sessions'::regclass THEN
    -- pair: anchored
    SELECT true
      INTO v_anchored
      FROM messenger.call_sessions AS s
     WHERE s.call_id = p_floor.call_id AND s.started_at = p_floor.anchor_started_at
     LIMIT 1;
    ELSE
        -- Another pair's calls relation: the same statement, planned per call.
        EXECUTE messenger._reap_pair_sql('messenger._reap_floor_trusted', 'anchored', p_run.calls, NULL,
                                         'p_floor.call_id', 'p_floor.anchor_started_at')
           INTO v_anchored
          USING p_floor.call_id, p_floor.anchor_started_at;
    END IF;
    RETURN coalesce(v_anchored, false);
END
$$;

COMMENT ON FUNCTION messenger._reap_floor_trusted(messenger.call_reaper_phase_run, record, bigint) IS
    'Private: whether a reaper cycle may start its backlog lane at the stored claim floor (checks (a)-(e): later as_of or the same loop, within poison_backoff_max, anchor exists, no VACUUM since; for stale_answered, the cutoff before talking_since less the fresh window).';
REVOKE ALL ON FUNCTION messenger._reap_floor_trusted(messenger.call_reaper_phase_run, record, bigint) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_floor_trusted(messenger.call_reaper_phase_run, record, bigint)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
