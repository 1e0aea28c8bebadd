-- Deploy call_timeout_reaper:schema to pg

BEGIN;

CREATE SCHEMA messenger;
COMMENT ON SCHEMA messenger IS 'Messenger calls, their realtime outbox and the call-timeout reaper.';
-- Nothing in this schema is for PUBLIC; each role below gets USAGE explicitly.
REVOKE ALL ON SCHEMA messenger FROM PUBLIC;

COMMIT;
