-- The database holds the call invariants (docs/design.md, "The messenger service's tables"), whoever writes the row.
BEGIN;
SELECT plan(7);

PREPARE ins(text, text, timestamptz, timestamptz, integer) AS
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
        answered_at, ended_at, updated_at, duration_seconds)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', $1, $2,
        '2100-01-01 00:00+00', $3, $4, '2100-01-01 00:00+00', $5);

SELECT lives_ok($$EXECUTE ins('Ringing', NULL, NULL, NULL, NULL)$$, 'a plain Ringing call is accepted');
SELECT throws_ok($$EXECUTE ins('Ringing', 'Timeout', NULL, NULL, NULL)$$, '23514', NULL,
    'an active call with an end_reason is refused');
SELECT throws_ok($$EXECUTE ins('Missed', 'Timeout', NULL, NULL, NULL)$$, '23514', NULL,
    'a terminal call without ended_at is refused');
SELECT throws_ok($$EXECUTE ins('Answered', NULL, NULL, NULL, NULL)$$, '23514', NULL,
    'an Answered call without answered_at is refused');
SELECT throws_ok($$EXECUTE ins('Failed', 'Error', '2100-01-01 00:00+00', '2100-01-01 00:01+00', 60)$$, '23514', NULL,
    'duration_seconds on anything but an Ended call is refused');
SELECT throws_ok($$EXECUTE ins('Gone', NULL, NULL, NULL, NULL)$$, '23514', NULL,
    'an unknown status is refused');
SELECT lives_ok($$EXECUTE ins('Ended', 'Hangup', '2100-01-01 00:00+00', '2100-01-01 00:01+00', 60)$$,
    'an Ended call with its duration is accepted');

SELECT * FROM finish();
ROLLBACK;
