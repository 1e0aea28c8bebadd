-- Deploy call_timeout_reaper:functions/call_is_due to pg

BEGIN;

-- messenger.call_is_due(status, started_at, updated_at, cutoff)
--
-- The reaper's one due rule, as a test: is a call of this status due at this cutoff (as_of minus
-- its phase's window, messenger.call_reaper_phases().timeout_setting)?
--   * Ringing:  started_at <= cutoff (phase 1: the time to answer counts from the start);
--   * Answered: updated_at <= cutoff (phase 2: no progress for the window; the service writes
--     updated_at at every sign of progress), and also started_at <= cutoff, which every due
--     call meets (started_at <= updated_at): the claim walks the range started_at <= cutoff of
--     ix_call_due and tests updated_at on the way. A call whose updated_at precedes its
--     started_at (a clock the service got wrong) is due once started_at too is past the window;
--   * any other status: never (terminal, INV-CALL-3).
-- Why started_at is the claim's key: it never changes while a call is active, so the index the
-- claims read (the product's own of active calls, (status, started_at), or ix_call_due,
-- (status, started_at, call_id)) names no column a progress update writes and that update stays
-- HOT; docs/design.md, "The due rule and its one index".
-- Every reader of "due" uses it (the claim, the preview, the metrics, sql/backlog.sql,
-- the bench, the tests) with status = <phase status> beside it.
-- LANGUAGE sql, IMMUTABLE, no SET clause: inlined, it becomes the boolean expression itself, so
-- `status IN ('Ringing', 'Answered')` proves that index's predicate and `started_at <=
-- cutoff` bounds its range, in a generic plan too. status is anyelement, as in
-- messenger.call_due_key: the product's column may be text, varchar or an enum, and inlined the
-- literals take its type (an enum has no implicit cast to text). EXECUTE stays granted to
-- PUBLIC: it reads nothing but its arguments.
CREATE FUNCTION messenger.call_is_due(status anyelement, started_at timestamptz, updated_at timestamptz,
                                      cutoff timestamptz)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
SELECT status IN ('Ringing', 'Answered')
   AND started_at OPERATOR(pg_catalog.<=) cutoff
   AND (status OPERATOR(pg_catalog.<>) 'Answered' OR updated_at OPERATOR(pg_catalog.<=) cutoff)
$$;

COMMENT ON FUNCTION messenger.call_is_due(anyelement, timestamptz, timestamptz, timestamptz) IS
$$The reaper's due rule: a Ringing call is due when started_at <= cutoff, an Answered one when updated_at <= cutoff (and started_at <= cutoff, the claim's range on ix_call_due); terminal calls never. cutoff = as_of - the phase's window. Usage: WHERE s.status = 'Ringing' AND messenger.call_is_due(s.status, s.started_at, s.updated_at, now() - interval '45 seconds').$$;

COMMIT;
