-- messenger.call_is_due, the reaper's one due rule, on each side of each boundary: a Ringing
-- call by started_at, an Answered one by updated_at (and started_at, the claim's range: a call
-- whose updated_at precedes its started_at is due once both are past), a terminal one never; for
-- a text, a varchar and an enum status (the product's column may be any of them).
BEGIN;
SELECT plan(10);

CREATE TYPE pg_temp.call_status AS ENUM ('Ringing', 'Answered', 'Ended', 'Missed', 'Declined', 'Failed');

SELECT is(messenger.call_is_due('Ringing'::text, '2100-01-01 10:00+00', '2100-01-01 11:00+00', '2100-01-01 10:00+00'),
          true, 'a Ringing call that started exactly at the cutoff is due, whatever its updated_at');
SELECT is(messenger.call_is_due('Ringing'::text, '2100-01-01 10:00:00.000001+00', '2100-01-01 10:00:00.000001+00', '2100-01-01 10:00+00'),
          false, 'a Ringing call that started a microsecond after the cutoff is not');
SELECT is(messenger.call_is_due('Answered'::text, '2100-01-01 08:00+00', '2100-01-01 10:00+00', '2100-01-01 10:00+00'),
          true, 'an Answered call whose last progress is exactly at the cutoff is due');
SELECT is(messenger.call_is_due('Answered'::text, '2100-01-01 08:00+00', '2100-01-01 10:00:00.000001+00', '2100-01-01 10:00+00'),
          false, 'an Answered call with progress a microsecond after the cutoff is not, however long ago it started');
SELECT is(messenger.call_is_due('Answered'::text, '2100-01-01 10:00:00.000001+00', '2100-01-01 09:00+00', '2100-01-01 10:00+00'),
          false, 'an Answered call whose updated_at precedes its started_at is not due before started_at is past the cutoff');
SELECT is(messenger.call_is_due('Answered'::text, '2100-01-01 10:00+00', '2100-01-01 09:00+00', '2100-01-01 10:00+00'),
          true, '... and is due once it is');
SELECT is(ARRAY(SELECT messenger.call_is_due(s, '2000-01-01 00:00+00', '2000-01-01 00:00+00', '2100-01-01 00:00+00')
                  FROM unnest(ARRAY['Ended', 'Missed', 'Declined', 'Failed']) AS s),
          ARRAY[false, false, false, false], 'a terminal call is never due');
SELECT is(messenger.call_is_due('Answered'::varchar, '2100-01-01 08:00+00', '2100-01-01 10:00+00', '2100-01-01 10:00+00'),
          true, 'a varchar status works the same');
SELECT is(messenger.call_is_due('Answered'::pg_temp.call_status, '2100-01-01 08:00+00', '2100-01-01 10:00:00.000001+00', '2100-01-01 10:00+00'),
          false, 'an enum status compares as the enum (still talking: not due)');
SELECT is(messenger.call_is_due('Ringing'::pg_temp.call_status, '2100-01-01 10:00+00', '2100-01-01 11:00+00', '2100-01-01 10:00+00'),
          true, 'an enum Ringing call is due by started_at');

SELECT * FROM finish();
ROLLBACK;
