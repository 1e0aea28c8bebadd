-- Revert call_timeout_reaper:functions/call_reaper_metrics from pg
-- Back to the v1.2.0 routine (same row): its own deploy script drops this one and creates it
-- with its owner and grant.

\ir ../../deploy/functions/call_reaper_metrics@v1.2.0.sql
