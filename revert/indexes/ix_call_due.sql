-- Revert call_timeout_reaper:indexes/ix_call_due from pg
-- Back to the released index (v1.1.0, v1.2.0): (status, call_due_key(status, started_at,
-- updated_at), call_id), built the way the deploy builds the new one (the same script, given
-- that definition): online beside it as ix_call_due_next, the new one dropped concurrently,
-- renamed, with v1.1.0's comment (its revert, next in a full revert, drops it). A product's
-- index of the name was never recorded and stays as it is.
-- No transaction: CREATE INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY cannot run in one.
-- This change is reverted before the claim's routines are (it comes after them in the plan):
-- they read the new index until the old one replaces it, then they are reverted too.

\set definition '(status, messenger.call_due_key(status, started_at, updated_at), call_id) WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL'
\set reverting true
\ir ../../deploy/indexes/ix_call_due.sql
