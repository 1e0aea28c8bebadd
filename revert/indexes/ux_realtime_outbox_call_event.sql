-- Revert call_timeout_reaper:indexes/ux_realtime_outbox_call_event from pg
-- Drops the reaper's ux_realtime_outbox_call_event, owned by record: only an index
-- messenger.call_reaper_indexes lists as this change's and that still has its recorded shape (a
-- product index of the name, or an equivalent unique index the deploy found, stays), with what
-- an interrupted build left.
-- No transaction: DROP INDEX CONCURRENTLY cannot run in one.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

SELECT pg_catalog.format('DROP INDEX CONCURRENTLY %I.%I', r.index_schema, r.index_name)
  FROM messenger.call_reaper_indexes AS r
 WHERE r.change = 'indexes/ux_realtime_outbox_call_event'
   AND r.shape = messenger._call_reaper_index_shape(
           pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name))) \gexec

DELETE FROM messenger.call_reaper_indexes AS r
 WHERE r.change = 'indexes/ux_realtime_outbox_call_event'
   AND pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)) IS NULL;
