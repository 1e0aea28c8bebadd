-- On a Citus worker pg_class hides shard relations unless citus.override_table_visibility is
-- off: messenger._reap_pair turns it off for itself where the setting exists, and gives the
-- caller's value back. Here (no Citus) the setting exists only as a placeholder this session
-- sets; a BEFORE INSERT trigger on the pair's outbox refuses (22000) a row written while it is
-- not off, which would make each call poison. The other pgTAP files run without the setting at all, the way a server without Citus is.
BEGIN;
SELECT plan(3);

\ir fixtures/second_pair.sql
CREATE FUNCTION pg_temp.note_visibility() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('citus.override_table_visibility', true) IS DISTINCT FROM 'off' THEN
        RAISE EXCEPTION 'citus.override_table_visibility is %', current_setting('citus.override_table_visibility', true)
            USING ERRCODE = '22000';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER note_visibility BEFORE INSERT ON pair_test.outbox
    FOR EACH ROW EXECUTE FUNCTION pg_temp.note_visibility();
SET LOCAL citus.override_table_visibility = on;

CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:00+00');
SELECT is((SELECT ARRAY[missed_count + failed_count, poisoned_count] FROM r1), ARRAY[3, 0],
          'while it runs citus.override_table_visibility is off (a worker''s shards visible): its three due calls closed, none poisoned');
SELECT is(current_setting('citus.override_table_visibility'), 'on', 'and the caller''s value is back after it');

SELECT throws_ok($$INSERT INTO pair_test.outbox (kind, target_kind, target_id, reference_id, payload)
                   SELECT kind, target_kind, target_id, reference_id, payload FROM pair_test.outbox LIMIT 1$$,
                 '22000', NULL, 'the trigger does refuse a row written with the caller''s value');

SELECT * FROM finish();
ROLLBACK;
