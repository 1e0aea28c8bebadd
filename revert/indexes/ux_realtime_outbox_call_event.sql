-- Revert call_timeout_reaper:indexes/ux_realtime_outbox_call_event from pg
-- Back to v1.1.0's index: the reaper's valid ux_realtime_outbox_call_event stays, with v1.1.0's
-- comment (that release's revert, next in a full revert, drops it); a product's index of the name
-- or on the same columns was never recorded and stays too. The outbox rows stay, the ones the
-- reaper wrote included: they are pushes still to be delivered.
-- No transaction: an unfinished build of the reaper's goes with DROP INDEX CONCURRENTLY.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec
