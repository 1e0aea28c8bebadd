-- A wrong pair is refused by messenger._reap_pair (its check, messenger._reap_pair_check) with
-- 22023 before anything is read or changed: a relation that is not a table, a column missing
-- or of another type than the default table's, a calls relation without ix_call_due's shape,
-- an outbox without ux_realtime_outbox_call_event's, a missing relation. A pair of the right
-- shape that the reaper's owner may not touch fails with 42501 and changes nothing either.
BEGIN;
SELECT plan(11);

\ir fixtures/second_pair.sql
CREATE TEMP TABLE quarantine_before AS SELECT * FROM messenger.call_reaper_quarantine;
CREATE VIEW pair_test.calls_view AS SELECT * FROM pair_test.calls;
CREATE TABLE pair_test.calls_noindex (LIKE messenger.call_sessions INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
CREATE TABLE pair_test.calls_nocolumn (LIKE messenger.call_sessions INCLUDING ALL);
ALTER TABLE pair_test.calls_nocolumn DROP COLUMN duration_seconds;
CREATE TABLE pair_test.outbox_retyped (LIKE messenger.realtime_outbox INCLUDING ALL);
ALTER TABLE pair_test.outbox_retyped ALTER COLUMN correlation_id TYPE text;
CREATE TABLE pair_test.outbox_nounique (LIKE messenger.realtime_outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY);
GRANT SELECT, UPDATE ON pair_test.calls_noindex, pair_test.calls_nocolumn TO messenger_call_reaper_owner;
GRANT INSERT ON pair_test.outbox_retyped, pair_test.outbox_nounique TO messenger_call_reaper_owner;

PREPARE run (regclass, regclass) AS
    SELECT * FROM messenger._reap_pair($1, $2, gen_random_uuid(), '2100-01-01 03:00+00',
                                       (SELECT to_jsonb(s) FROM messenger.call_reaper_settings AS s), 63, NULL);
SELECT throws_ok($$EXECUTE run('pair_test.calls_view', 'pair_test.outbox')$$, '22023', NULL,
                 'a view as the calls relation is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.outbox', 'pair_test.calls')$$, '22023', NULL,
                 'a pair given the wrong way round is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls_noindex', 'pair_test.outbox')$$, '22023', NULL,
                 'a calls relation without an index of ix_call_due''s shape is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls_nocolumn', 'pair_test.outbox')$$, '22023', NULL,
                 'a calls relation missing a column the reaper writes is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox_retyped')$$, '22023', NULL,
                 'an outbox whose column has another type than the default outbox''s is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox_nounique')$$, '22023', NULL,
                 'an outbox without the reaper''s uniqueness of a call''s pushes is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls', NULL)$$, '22023', NULL,
                 'a pair without its outbox is refused with 22023');

-- The right shape, no grants to the reaper's owner.
CREATE SCHEMA pair_closed;
CREATE TABLE pair_closed.calls (LIKE messenger.call_sessions INCLUDING ALL);
CREATE TABLE pair_closed.outbox (LIKE messenger.realtime_outbox INCLUDING ALL);
INSERT INTO pair_closed.calls SELECT * FROM pair_test.calls;
SELECT throws_ok($$EXECUTE run('pair_closed.calls', 'pair_closed.outbox')$$, '42501', NULL,
                 'a pair the reaper''s owner has no rights on fails with 42501');

SELECT is((SELECT count(*)::integer FROM pair_test.calls WHERE status IN ('Missed', 'Failed'))
          + (SELECT count(*)::integer FROM pair_closed.calls WHERE status IN ('Missed', 'Failed'))
          + (SELECT count(*)::integer FROM pair_test.outbox) + (SELECT count(*)::integer FROM pair_closed.outbox)
          + (SELECT count(*)::integer FROM messenger.realtime_outbox)
          + (SELECT count(*)::integer FROM messenger.call_sessions WHERE status IN ('Missed', 'Failed')), 0,
          'no refused run closed a call or wrote an outbox row, on any pair');
SELECT bag_eq('SELECT * FROM messenger.call_reaper_quarantine', 'SELECT * FROM quarantine_before',
              'nor quarantined anything');

-- The checks are messenger._reap_pair_check's, which hands the pair's cycle the settings it read.
SELECT is((SELECT ROW(c.batch, c.polling, c.backoff, c.backoff_max)::text
             FROM messenger._reap_pair_check('pair_test.calls', 'pair_test.outbox', gen_random_uuid(),
                                             '2100-01-01 03:00+00', (SELECT to_jsonb(s) FROM messenger.call_reaper_settings AS s),
                                             63) AS c),
          (SELECT ROW(s.batch_size, s.polling_interval, s.poison_backoff, s.poison_backoff_max)::text
             FROM messenger.call_reaper_settings AS s),
          'a pair of the right shape passes _reap_pair_check, which returns the settings the phases read');

SELECT * FROM finish();
ROLLBACK;
