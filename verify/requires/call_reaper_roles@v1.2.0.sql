-- Verify call_timeout_reaper:requires/call_reaper_roles on pg
-- The same check as the deploy: the roles under the reaper's names are still roles it would create.

BEGIN;

\ir ../../deploy/requires/call_reaper_roles.sql

ROLLBACK;
