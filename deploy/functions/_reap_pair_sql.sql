-- Deploy call_timeout_reaper:functions/_reap_pair_sql to pg

BEGIN;

-- Contract: the text of one statement of a cycle routine, spelled for another relation pair
-- (a colocated Citus shard pair), for that routine's EXECUTE. Each statement of the cycle that
-- reads or writes the pair is written once, as the routine's static statement on the default
-- pair (messenger.call_sessions, messenger.realtime_outbox), whose generic plan the session
-- keeps; the line before it is "-- pair: <p_name>", and it ends with the first ";" at the end of
-- a line. This reads that text from p_routine's source (pg_proc.prosrc) and:
--   - drops its PL/pgSQL INTO list (a line whose first word is INTO): the routine's EXECUTE
--     has its own;
--   - puts $n for the n-th name of p_params wherever that name stands as a whole word (a
--     variable, a parameter, a record's field: v_status, p_cutoff, l.backlog_key), in the order
--     the routine's USING passes them;
--   - puts p_calls for messenger.call_sessions and p_outbox for messenger.realtime_outbox;
--   - fills the outbox id's two slots, /* id column */ and /* id value */, when p_outbox's id
--     has no identity and no default (a Citus shard's): id is then named and numbered by the
--     default outbox's sequence, in the order of the select list (nextval there is evaluated
--     after its ORDER BY).
-- Refuses, changing nothing: a routine with no statement of that name, or more than one
-- (42704); a name of p_params the statement does not use, a variable (p_*, v_*, c_*, l.*) the
-- statement still names after the replacement, or an outbox statement without p_outbox
-- (22023). A test runs every routine's call of it (tests/pgtap/pair_sql.sql), so a variable
-- added to a statement but not to its call fails there, not on a Citus worker.
-- It reads the routine's source and rewrites the text on each call: 0.1-0.4 ms (one regular
-- expression per variable), paid only by another pair, beside the planning of each EXECUTE
-- (0.5-0.9 ms) that it paid anyway. No cache: a session-level one (a custom setting, a temporary
-- table) is one the caller could fill first, and this text runs as the reaper's owner.
CREATE FUNCTION messenger._reap_pair_sql(
    p_routine regproc,
    p_name    text,
    p_calls   regclass,
    p_outbox  regclass,
    VARIADIC p_params text[] DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_marker  constant text := '-- pair: ' || p_name || E'\n';
    v_src     text;
    v_at      integer;
    v_sql     text;
    v_done    text;
    v_left    text;
BEGIN
    SELECT p.prosrc INTO v_src FROM pg_catalog.pg_proc AS p WHERE p.oid = p_routine;
    v_at := strpos(v_src, v_marker);
    IF v_at = 0 OR strpos(substr(v_src, v_at + 1), v_marker) > 0 THEN
        RAISE EXCEPTION '% has % statement marked "-- pair: %"', p_routine,
            CASE WHEN v_at = 0 THEN 'no' ELSE 'more than one' END, p_name
            USING ERRCODE = '42704';
    END IF;
    v_sql := substr(v_src, v_at + length(v_marker));
    v_at := strpos(v_sql, E';\n');
    IF v_at = 0 THEN
        RAISE EXCEPTION 'the statement "%" of % has no ";" at the end of a line', p_name, p_routine
            USING ERRCODE = '42704';
    END IF;
    v_sql := regexp_replace(left(v_sql, v_at - 1), '^[ \t]*INTO\M[^\n]*\n', '', 'gn');

    FOR i IN 1 .. coalesce(cardinality(p_params), 0) LOOP
        v_done := regexp_replace(v_sql, '\m' || replace(p_params[i], '.', '\.') || '\M', '$' || i, 'g');
        IF v_done = v_sql THEN
            RAISE EXCEPTION 'the statement "%" of % does not use %', p_name, p_routine, p_params[i]
                USING ERRCODE = '22023';
        END IF;
        v_sql := v_done;
    END LOOP;
    v_left := substring(v_sql FROM '\m(?:[pvc]_\w+|l\.\w+)');
    IF v_left IS NOT NULL THEN
        RAISE EXCEPTION 'the statement "%" of % still names %', p_name, p_routine, v_left
            USING ERRCODE = '22023',
                  HINT = 'Pass every variable the statement uses, in the order of its USING.';
    END IF;

    -- replace(), not a regular expression: a third of the cost, and no marked statement names a
    -- relation that starts with either name (tests/pgtap/pair_sql.sql finds neither left).
    v_sql := replace(v_sql, 'messenger.call_sessions', p_calls::text);
    IF strpos(v_sql, 'messenger.realtime_outbox') > 0 THEN
        IF p_outbox IS NULL THEN
            RAISE EXCEPTION 'the statement "%" of % writes the outbox: pass the pair''s outbox', p_name, p_routine
                USING ERRCODE = '22023';
        END IF;
        v_sql := replace(v_sql, 'messenger.realtime_outbox', p_outbox::text);
        IF EXISTS (SELECT FROM pg_catalog.pg_attribute AS a
                    WHERE a.attrelid = p_outbox AND a.attname = 'id' AND NOT a.attisdropped
                      AND a.attidentity = '' AND NOT a.atthasdef) THEN
            v_sql := replace(replace(v_sql, '/* id column */', 'id, '), '/* id value */',
                             format('pg_catalog.nextval(%L::pg_catalog.regclass), ',
                                    pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')));
        END IF;
    END IF;
    RETURN v_sql;
END
$$;

COMMENT ON FUNCTION messenger._reap_pair_sql(regproc, text, regclass, regclass, text[]) IS
    'Private: one statement of a cycle routine, read from its source and spelled for another relation pair (variables as $n), for its EXECUTE.';
REVOKE ALL ON FUNCTION messenger._reap_pair_sql(regproc, text, regclass, regclass, text[]) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_pair_sql(regproc, text, regclass, regclass, text[])
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
