-- Revert call_timeout_reaper:indexes/ix_call_due from pg
-- Back to v1.1.0's index: the reaper's valid ix_call_due stays, with v1.1.0's comment (that
-- release's revert, next in a full revert, drops it); a product's index of the name was never
-- recorded and stays too.
-- No transaction: unfinished builds of the reaper's go with DROP INDEX CONCURRENTLY. Sqitch runs
-- this revert after indexes/ux_realtime_outbox_call_event failed (never the failed change's own
-- revert), so whatever that build left goes here as well.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec
