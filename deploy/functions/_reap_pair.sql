-- Deploy call_timeout_reaper:functions/_reap_pair to pg

BEGIN;

-- Contract: the phases of one cycle on one relation pair, inside the caller's transaction (the
-- caller holds the single-runner lock), one per row of messenger.call_reaper_phases(), in that
-- order, each told its messenger.call_reaper_phase_run (its window is the setting the row's
-- timeout_setting names). A phase:
--   * lanes: messenger._reap_lanes says where its retry, fresh and backlog lanes lie (the claim
--     floor checked first);
--   * claim: messenger._reap_claim takes its batch, FOR NO KEY UPDATE SKIP LOCKED;
--   * close: messenger._reap_close closes it set-based, poison bisected and quarantined,
--     transient errors re-raised, within the phase's share of the subtransaction budget (calls
--     left untried are counted in deferred); retried calls that closed leave the quarantine;
--   * floor: messenger._reap_save_floor places and writes it from what the backlog lane, the
--     sweep and the close did (messenger.call_reaper_backlog_outcome);
--   * log: event=batch_selected and event=calls_reaped at DEBUG; the cycle's one LOG record
--     (messenger._reap_cycle's cycle_completed) lists the calls this returns.
-- Returns the pair's sums (calls made Missed, made Failed, skipped locked, poisoned, deferred,
-- the subtransactions spent, each closed call's lag) and the calls it made Missed and Failed,
-- each as call_id/caller/callee, comma-separated (NULL for none).
--   p_calls, p_outbox  the pair: messenger.call_sessions and messenger.realtime_outbox (the
--               default pair: the phases run their static statements, plans and costs as a
--               cycle always had), or another pair of their shape, e.g. a colocated shard pair
--               on a Citus worker (the same statements through EXECUTE, a claim floor of its own)
--   p_run_id    the cycle's run id (the outbox rows' correlation_id)
--   p_as_of     the cycle's as_of
--   p_settings  to_jsonb() of messenger.call_reaper_settings with the cycle's arguments laid
--               over it (batch_size, ring_timeout, stale_timeout); it reads batch_size,
--               polling_interval, poison_backoff, poison_backoff_max and the setting each phase's
--               timeout_setting names. jsonb, not the table's row type: Citus creates a routine
--               on its workers only if every type it depends on is there, and the row type of a
--               coordinator table never is (docs/citus.md)
--   p_budget    most subtransactions the pair may open: phase 1 at most half, the last the rest
--   p_after_run the previous cycle of the caller's drain or catch-up loop, or NULL
-- Errors: 22023 (nothing read or changed) for a pair not of the default pair's shape or
-- settings it cannot read (messenger._reap_pair_check says which). A pair the owner may not
-- read or write fails with 42501 at its first statement. Anything a phase raises is raised (the
-- caller rolls back).
-- Locking: none of its own; the caller holds the single-runner lock (messenger._reap_cycle), and
-- every claim is FOR NO KEY UPDATE SKIP LOCKED, so a second runner on the same pair never
-- closes a call twice. Writes no ledger row and no counters: that is the cycle's (on Citus, the
-- coordinator adds up each pair's row).
-- An outbox relation whose id has no default (a Citus shard) gets ids from the default outbox's
-- sequence (messenger._reap_close).
-- SECURITY DEFINER like the cycle: EXECUTE for the owner's cycle and for operators (the fan-out
-- on a worker), never for the job role or PUBLIC.
-- Citus: on a worker pg_class hides shards from the shape check unless
-- citus.override_table_visibility is off, so the routine turns it off for itself and gives the
-- caller's value back on return; where the setting does not exist (no Citus) it sets nothing.
-- Not a SET clause on the routine: without Citus loaded that is a placeholder setting, which a
-- deployer that is not a superuser may not put on a routine (42501, PostgreSQL 15-18).
-- The planner settings of every statement of a cycle on a pair are here, once, for every
-- routine it calls (each of them a SET clause of its own cost a setting's save and restore per
-- call, a few microseconds, many times a cycle); only messenger._reap_close turns sorting back
-- on for its statement:
--   * plan_cache_mode = force_generic_plan: each statement planned once per session, not once
--     per cycle (on a partitioned call_sessions, once per partition per cycle); the generic
--     plans are the same range scans and prune partitions at executor start-up;
--   * enable_sort = off: a claim walks its index (messenger._call_reaper_claim_indexes) in key
--     order and never sorts a lane (on the product's own index of active calls, (status,
--     started_at) without call_id, the calls of one started_at come in the heap's order);
--   * jit = off: the cost a disabled sort is charged would otherwise make the executor
--     JIT-compile statements that run in microseconds.
-- tests/pgtap/cycle_settings.sql holds them to this one place.
-- Its result gained calls_missed and calls_failed: a new row type, so the released one goes first.
DROP FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid);

CREATE FUNCTION messenger._reap_pair(
    p_calls     regclass,
    p_outbox    regclass,
    p_run_id    uuid,
    p_as_of     timestamptz,
    p_settings  jsonb,
    p_budget    integer,
    p_after_run uuid,
    OUT missed_count         integer,
    OUT failed_count         integer,
    OUT skipped_locked_count integer,
    OUT poisoned_count       integer,
    OUT deferred_count       integer,
    OUT subtransactions      integer,
    OUT lag_seconds          double precision[],
    OUT calls_missed         text,
    OUT calls_failed         text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    v_rule     record;
    v_run      messenger.call_reaper_phase_run;
    v_lanes    messenger.call_reaper_lanes;
    v_status   messenger.call_sessions.status%TYPE;   -- text, varchar or the enum
    v_claim    record;
    v_close    record;
    v_retry_ids uuid[];
    v_backlog  messenger.call_reaper_backlog_outcome;   -- for _reap_save_floor
    v_visibility  text := pg_catalog.current_setting('citus.override_table_visibility', true);
BEGIN
    -- Local: a routine that raises leaves it to the caller's rollback to restore.
    IF v_visibility IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.override_table_visibility', 'off', true);
    END IF;
    -- The phase run by name: what every phase shares, then per phase its rule, window and budget.
    SELECT c.batch, c.polling, c.backoff, c.backoff_max INTO v_run.batch, v_run.fresh, v_run.backoff, v_run.backoff_max
      FROM messenger._reap_pair_check(p_calls, p_outbox, p_run_id, p_as_of, p_settings, p_budget) AS c;
    v_run.run_id := p_run_id;
    v_run.as_of := p_as_of;
    v_run.after_run := p_after_run;
    v_run.calls := p_calls;
    v_run.outbox := p_outbox;

    missed_count := 0;
    failed_count := 0;
    skipped_locked_count := 0;
    poisoned_count := 0;
    deferred_count := 0;
    subtransactions := 0;
    lag_seconds := '{}'::double precision[];
    -- Each phase but the last at most half of the budget left, so poison in phase 1 never
    -- starves phase 2 of attempts.
    FOR v_rule IN SELECT r.phase, r.new_status, r.end_reason, r.timeout_setting, lead(r.phase) OVER () IS NULL AS is_last
                    FROM messenger.call_reaper_phases() AS r LOOP
        v_run.phase := v_rule.phase;
        v_run.timeout := (p_settings ->> v_rule.timeout_setting)::interval;
        v_run.budget := CASE WHEN v_rule.is_last THEN p_budget - subtransactions ELSE (p_budget - subtransactions) / 2 END;
        -- Assignments, not SELECT * FROM: a simple expression is no statement of its own.
        v_lanes := messenger._reap_lanes(v_run);
        v_status := v_lanes.status;
        v_claim := messenger._reap_claim(v_run, v_lanes);
        v_retry_ids := v_claim.retry_ids;
        RAISE DEBUG 'call_reaper event=batch_selected run_id=% phase=% count=% retried=% skipped_locked=%',
            p_run_id, v_rule.phase, cardinality(v_claim.ids), cardinality(v_retry_ids), v_claim.skipped_locked;
        v_close := messenger._reap_close(v_run, v_claim.ids, v_claim.started, v_claim.keys, v_claim.n_fresh,
                                         cardinality(v_retry_ids));
        IF cardinality(v_retry_ids) > 0 THEN
            -- Retried calls that closed leave the quarantine; those that failed again stay.
            IF p_calls = 'messenger.call_sessions'::regclass THEN
            -- pair: retried left
            DELETE FROM messenger.call_reaper_quarantine AS q
             WHERE q.call_id = ANY (v_retry_ids)
               AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                                WHERE s.call_id = q.call_id AND s.status = v_status);
            ELSE
                -- Another pair's calls relation: the same statement.
                EXECUTE messenger._reap_pair_sql('messenger._reap_pair', 'retried left', p_calls, NULL,
                                                 'v_retry_ids', 'v_status')
                  USING v_retry_ids, v_status;
            END IF;
        END IF;
        -- The floor: _reap_save_floor places it from what the backlog lane and the close did; of
        -- the calls left untried it needs the first one up to the backlog lane's end.
        v_backlog := v_claim.backlog;
        v_backlog.deferred := v_close.deferred;
        IF v_close.first_deferred <= v_claim.n_fresh + cardinality(v_retry_ids) + cardinality(v_backlog.ids) THEN
            v_backlog.deferred_key := (v_claim.started)[v_close.first_deferred];
            v_backlog.deferred_id := (v_claim.ids)[v_close.first_deferred];
        END IF;
        PERFORM messenger._reap_save_floor(v_run, v_lanes, v_backlog);
        IF v_close.reaped > 0 THEN
            RAISE DEBUG 'call_reaper event=calls_reaped run_id=% phase=% status=% end_reason=% count=% calls=%',
                p_run_id, v_rule.phase, v_rule.new_status, v_rule.end_reason, v_close.reaped, v_close.calls;
        END IF;
        calls_missed := nullif(concat_ws(',', calls_missed, CASE v_rule.new_status WHEN 'Missed' THEN v_close.calls END), '');
        calls_failed := nullif(concat_ws(',', calls_failed, CASE v_rule.new_status WHEN 'Failed' THEN v_close.calls END), '');
        -- Calls are counted by what they became (missed_count, failed_count).
        missed_count := missed_count + CASE v_rule.new_status WHEN 'Missed' THEN v_close.reaped ELSE 0 END;
        failed_count := failed_count + CASE v_rule.new_status WHEN 'Failed' THEN v_close.reaped ELSE 0 END;
        skipped_locked_count := skipped_locked_count + v_claim.skipped_locked;
        poisoned_count := poisoned_count + v_close.poisoned;
        deferred_count := deferred_count + v_close.deferred;
        subtransactions := subtransactions + v_close.subtransactions;
        lag_seconds := lag_seconds || v_close.lag_seconds;
    END LOOP;
    IF v_visibility IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.override_table_visibility', v_visibility, true);
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid) IS
    'Private: one reaper cycle''s phases (lanes, claim, close, floor) on one relation pair (calls, outbox): the default pair as messenger._reap_cycle runs it, or a pair of its shape (a colocated shard pair); 22023 for a pair of another shape. No lock, ledger or counters of its own.';
REVOKE ALL ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)
    TO messenger_call_reaper_operator;

COMMIT;
