-- Revert call_timeout_reaper:indexes/ux_realtime_outbox_call_event from pg
-- Only the index the deploy made (its comment says so), online.
-- No transaction: DROP INDEX CONCURRENTLY, so that no writer waits, cannot run in one. The outbox rows stay, the ones the reaper
-- wrote included: they are pushes still to be delivered.

SELECT coalesce(pg_catalog.obj_description(pg_catalog.to_regclass('messenger.ux_realtime_outbox_call_event'), 'pg_class')
                LIKE 'Added by call\_timeout\_reaper:%', false) AS ours \gset

\if :ours
DROP INDEX CONCURRENTLY messenger.ux_realtime_outbox_call_event;
\endif
