-- Revert call_timeout_reaper:requires/messenger_tables from pg
-- The deploy only checked the messenger service's tables; there is nothing to undo, and the
-- tables stay exactly as they are.

BEGIN;
COMMIT;
