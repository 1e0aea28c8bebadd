-- Revert call_timeout_reaper:functions/purge_call_reaper_history from pg
-- Back to the v1.1.0 routine (same signature, the owner role its owner again): its own deploy
-- script replaces this one.

\ir ../../deploy/functions/purge_call_reaper_history@v1.1.0.sql
