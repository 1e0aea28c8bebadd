-- Revert call_timeout_reaper:requires/call_reaper_roles from pg
-- The deploy only checked the roles under the reaper's names; there is nothing to undo.

BEGIN;
COMMIT;
