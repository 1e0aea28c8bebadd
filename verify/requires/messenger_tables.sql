-- Verify call_timeout_reaper:requires/messenger_tables on pg
-- The same check as the deploy: the messenger service's tables still meet the reaper's contract.
-- call_reaper_check_only stops the deploy script after its check (the snapshot it takes then
-- is the deploy's alone), and that the snapshot table is there is not checked: a database
-- deployed before it was added has none.

BEGIN;

\set call_reaper_check_only on
\ir ../../deploy/requires/messenger_tables.sql

ROLLBACK;
