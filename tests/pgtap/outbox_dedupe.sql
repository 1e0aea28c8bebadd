-- Never push twice: the database refuses a second row for the same (kind, call, recipient) of
-- the call events (the index ux_realtime_outbox_call_event). The service's own CHECKs on the
-- outbox (payload keys, target format) are in tests/stand-in/service_tables.sql.
BEGIN;
SELECT plan(4);

PREPARE push(text, text, jsonb) AS
INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
VALUES ($1, 'User', $2, '00000000-0000-0000-0000-0000000000e1', $3);

SELECT lives_ok($$EXECUTE push('CallMissed', 'user:00000000-0000-0000-0000-00000000e0a1',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Missed", "mediaType": "Audio"}')$$,
    'the first CallMissed row of a call is accepted');
-- Refused by the reaper's index, not by chance: the unique_violation names it.
CREATE FUNCTION pg_temp.refused_by(p_sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_constraint text;
BEGIN
    EXECUTE p_sql;
    RETURN 'accepted';
EXCEPTION WHEN unique_violation THEN
    GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
    RETURN v_constraint;
END
$$;
SELECT is(pg_temp.refused_by($$EXECUTE push('CallMissed', 'user:00000000-0000-0000-0000-00000000e0a1',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Missed", "mediaType": "Audio"}')$$),
    'ux_realtime_outbox_call_event',
    'a second CallMissed row for the same call and recipient raises unique_violation on ux_realtime_outbox_call_event');
SELECT lives_ok($$EXECUTE push('CallEnded', 'user:00000000-0000-0000-0000-00000000e0a1',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Failed", "mediaType": "Audio"}')$$,
    'another event kind for the same call and recipient is accepted');
SELECT lives_ok($$EXECUTE push('CallEnded', 'user:00000000-0000-0000-0000-00000000e0b1',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Failed", "mediaType": "Audio"}')$$,
    'the same event for the other party is accepted');
SELECT * FROM finish();
ROLLBACK;
