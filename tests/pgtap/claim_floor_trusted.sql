-- When a cycle may trust a stored claim floor: messenger._reap_floor_trusted, the one home of
-- the checks (a)-(d) (docs/design.md, "The claim floor"). A floor passing every check is
-- trusted; each check failing alone distrusts it (false, never NULL); the next cycle of the
-- setter's drain or catch-up loop trusts it at the same as_of, no other cycle does.
BEGIN;
SELECT plan(9);

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000a1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 11:00+00', '2100-01-01 11:00+00');
-- Set by run ...b1 at 12:00, when call_sessions had been vacuumed 7 times.
DELETE FROM messenger.call_reaper_claim_floor;
INSERT INTO messenger.call_reaper_claim_floor
       (calls, phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed)
VALUES ('messenger.call_sessions', 'ring_timeout', '2100-01-01 11:00+00', '00000000-0000-0000-0000-0000000000a1', '2100-01-01 12:00+00',
        '2100-01-01 12:00+00', '00000000-0000-0000-0000-0000000000b1', '2100-01-01 11:00+00', 7, true, 0);

-- A cycle at p_as_of (poison_backoff_max 1 hour), after run p_after_run, VACUUM count p_vacuums.
CREATE FUNCTION pg_temp.trusted(p_as_of timestamptz, p_after_run uuid DEFAULT NULL, p_vacuums bigint DEFAULT 7)
RETURNS boolean LANGUAGE sql AS $$
    SELECT messenger._reap_floor_trusted(
               ROW('ring_timeout', gen_random_uuid(), p_as_of, '45 seconds', 200, '15 seconds', '1 minute',
                   '1 hour', 63, p_after_run, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
               (SELECT f FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout'),
               p_vacuums)
$$;

SELECT is(pg_temp.trusted('2100-01-01 12:01+00'), true,
          'a floor passing every check is trusted by a later cycle');
SELECT is(pg_temp.trusted('2100-01-01 12:00+00'), false,
          '(a) a cycle at the setter''s own as_of, from no loop, does not trust it');
SELECT is(pg_temp.trusted('2100-01-01 12:00+00', '00000000-0000-0000-0000-0000000000b1'), true,
          '(a) the next cycle of the setter''s loop trusts it at the same as_of');
SELECT is(pg_temp.trusted('2100-01-01 12:00+00', gen_random_uuid()), false,
          '(a) a cycle after another run does not trust it at the same as_of');
SELECT is(pg_temp.trusted('2100-01-01 11:59+00', '00000000-0000-0000-0000-0000000000b1'), false,
          '(a) an earlier as_of does not trust it, even from the setter''s loop');
SELECT is(pg_temp.trusted('2100-01-01 13:00+00'), false,
          '(b) a cycle poison_backoff_max past the floor''s reset_at does not trust it');
SELECT is(pg_temp.trusted('2100-01-01 12:01+00', NULL, 8), false,
          '(d) a VACUUM of call_sessions since the floor was set distrusts it');
DELETE FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000a1';
SELECT is(pg_temp.trusted('2100-01-01 12:01+00'), false,
          '(c) a floor whose anchor call is gone is not trusted');
SELECT is(messenger._reap_floor_trusted(
              ROW('ring_timeout', gen_random_uuid(), '2100-01-01 12:01+00', '45 seconds', 200, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              NULL::messenger.call_reaper_claim_floor, 7),
          false, 'no stored floor is not trusted (false, not NULL)');

SELECT * FROM finish();
ROLLBACK;
