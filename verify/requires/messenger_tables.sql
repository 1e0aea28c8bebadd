-- Verify call_timeout_reaper:requires/messenger_tables on pg
-- The same check as the deploy: the messenger service's tables still meet the reaper's contract.

BEGIN;

\ir ../../deploy/requires/messenger_tables.sql

ROLLBACK;
