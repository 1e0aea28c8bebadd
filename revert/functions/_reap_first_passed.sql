-- Revert call_timeout_reaper:functions/_reap_first_passed from pg
-- Back to the released routine (v1.1.0, v1.2.0), on call_due_key: the same signature, so the
-- released deploy script replaces it.

\ir ../../deploy/functions/_reap_first_passed@v1.1.0.sql
