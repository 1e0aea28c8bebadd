-- Deploy call_timeout_reaper:functions/call_due_key to pg

BEGIN;

-- messenger.call_due_key(status, started_at, updated_at)
--
-- The reaper's one due rule: the instant a call's timeout counts from. A Ringing call is due at
-- call_due_key + ring_timeout (it counts from started_at), an Answered call at call_due_key +
-- stale_timeout (from updated_at, its last progress); any other status is terminal and has no
-- key (NULL). So "is this call due at as_of?" is, everywhere:
--   status = <phase status> AND messenger.call_due_key(status, started_at, updated_at) <= as_of - <timeout>
-- The key carries no timeout because timeouts are arguments of a cycle, not stored state.
-- ix_call_due indexes (status, call_due_key(...), call_id), so each phase's due calls are one
-- range of one index, oldest due first (pgmq's one `vt` column with one index).
-- LANGUAGE sql, IMMUTABLE, no SET clause: the planner inlines it into a CASE expression, in the
-- index definition and in every query alike, which is how a query matches the index.
-- status is anyelement because call_sessions is the messenger service's: its status may be
-- text, varchar or its own enum type, and an enum has no implicit cast to text. Inlined, the
-- literals take the column's type ('Ringing'::call_status), compared with that type's own
-- immutable equality; casting an enum to text instead would call enum_out, which is only
-- STABLE and may not be indexed. A polymorphic body is a string, parsed when inlined: it names
-- its operator, so no session's search_path can change what an inlined copy computes.
-- EXECUTE stays granted to PUBLIC: every role that writes call_sessions evaluates it through the
-- index (without EXECUTE a session would not inline it and its writes would fail), and it reads
-- nothing but its arguments.
CREATE OR REPLACE FUNCTION messenger.call_due_key(status anyelement, started_at timestamptz, updated_at timestamptz)
RETURNS timestamptz
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
SELECT CASE WHEN status OPERATOR(pg_catalog.=) 'Ringing' THEN started_at
            WHEN status OPERATOR(pg_catalog.=) 'Answered' THEN updated_at END
$$;

COMMENT ON FUNCTION messenger.call_due_key(anyelement, timestamptz, timestamptz) IS
$$The reaper's due rule: started_at for Ringing calls, updated_at for Answered ones, NULL for terminal calls. A call is due when call_due_key(status, started_at, updated_at) <= as_of - ring_timeout (Ringing) or as_of - stale_timeout (Answered). Indexed by ix_call_due.$$;

COMMIT;
