-- Revert call_timeout_reaper:functions/_reap_cycle from pg
-- Back to the v1.1.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/functions/_reap_cycle@v1.1.0.sql
