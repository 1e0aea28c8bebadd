-- Revert call_timeout_reaper:functions/purge_call_reaper_history from pg
-- Back to the v1.2.0 routine (same signature, owned by the deployer as that one is): its own
-- deploy script replaces this one.

\ir ../../deploy/functions/purge_call_reaper_history@v1.2.0.sql
