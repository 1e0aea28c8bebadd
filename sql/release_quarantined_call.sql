-- Release one quarantined call: the next cycle tries it again (fix the cause first).
--   psql -X -d messenger -v call_id=<uuid> -f sql/release_quarantined_call.sql
\if :{?call_id}
\else
  \warn 'usage: psql -v call_id=<uuid> -f sql/release_quarantined_call.sql'
  \quit
\endif
DELETE FROM messenger.call_reaper_quarantine
 WHERE call_id = :'call_id'::uuid
RETURNING call_id, phase, attempts, last_sqlstate, 'released' AS action;
