-- Revert call_timeout_reaper:functions/_reap_claim_retries from pg
-- Back to the released routine (v1.1.0, v1.2.0), on call_due_key: the signature with the pair's
-- calls relation dropped, the released deploy script makes it again.
-- No transaction: Sqitch runs this revert after indexes/ix_call_due (the next change) failed,
-- never the failed change's own revert: whatever its build left of the reaper's (an INVALID
-- ix_call_due_next, parts attached to nothing) goes first, with DROP INDEX CONCURRENTLY.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec
-- The pair's calls relation is a parameter the release does not have.
DROP FUNCTION IF EXISTS messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass);

\ir ../../deploy/functions/_reap_claim_retries@v1.1.0.sql
