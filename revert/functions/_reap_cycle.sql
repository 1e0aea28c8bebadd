-- Revert call_timeout_reaper:functions/_reap_cycle from pg
-- Back to the released function by its own deploy script (CREATE OR REPLACE, the same
-- signature and grants).

\ir ../../deploy/functions/_reap_cycle@v2.0.0.sql
