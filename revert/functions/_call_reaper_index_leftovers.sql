-- Revert call_timeout_reaper:functions/_call_reaper_index_leftovers from pg
-- First drops what the reaper's failed or cancelled index builds left (recorded, INVALID or
-- attached to nothing): the index changes are planned after this one, so when Sqitch reverts a
-- deploy that failed in an index build (the failed change itself has no revert to run) this is
-- the first revert that can tell the build's leftover from anything of the product's.
-- No transaction: DROP INDEX CONCURRENTLY cannot run in one.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

DROP FUNCTION IF EXISTS messenger._call_reaper_index_leftovers();
