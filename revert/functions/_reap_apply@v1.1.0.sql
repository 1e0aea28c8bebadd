-- Revert call_timeout_reaper:functions/_reap_apply from pg
-- Back to the v1.0.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/functions/_reap_apply@v1.0.0.sql
