-- Revert call_timeout_reaper:procedures/drain_call_timeouts from pg
-- Back to the v1.0.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/procedures/drain_call_timeouts@v1.0.0.sql
