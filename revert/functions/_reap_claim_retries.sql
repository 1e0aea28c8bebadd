-- Revert call_timeout_reaper:functions/_reap_claim_retries from pg
-- Back to the released routine (v1.1.0, v1.2.0), on call_due_key: the same signature, so the
-- released deploy script replaces it.
-- No transaction: Sqitch runs this revert after indexes/ix_call_due (the next change) failed,
-- never the failed change's own revert: whatever its build left of the reaper's (an INVALID
-- ix_call_due_next, parts attached to nothing) goes first, with DROP INDEX CONCURRENTLY.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

\ir ../../deploy/functions/_reap_claim_retries@v1.1.0.sql
