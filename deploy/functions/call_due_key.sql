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
-- The claims walk started_at (ix_call_due) and filter by messenger.call_is_due; this key is what
-- the preview shows and the close measures its lag from. No index of the reaper's names it: an
-- index on updated_at would make every progress update of an Answered call non-HOT.
-- LANGUAGE sql, IMMUTABLE, no SET clause: the planner inlines it into a CASE expression.
-- status is anyelement because call_sessions is the messenger service's: its status may be
-- text, varchar or its own enum type, and an enum has no implicit cast to text. Inlined, the
-- literals take the column's type ('Ringing'::call_status), compared with that type's own
-- immutable equality; casting an enum to text instead would call enum_out, which is only
-- STABLE and may not be indexed. A polymorphic body is a string, parsed when inlined: it names
-- its operator, so no session's search_path can change what an inlined copy computes.
-- EXECUTE stays granted to PUBLIC: it reads nothing but its arguments, and a product index or
-- view may use it, which is why reverting stops (55000) while an index uses the function
-- instead of dropping that index with it.
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
$$The reaper's due rule: started_at for Ringing calls, updated_at for Answered ones, NULL for terminal calls. A call is due when call_due_key(status, started_at, updated_at) <= as_of - ring_timeout (Ringing) or as_of - stale_timeout (Answered). $$;

COMMIT;
