-- Deploy call_timeout_reaper:types/call_reaper_backlog_outcome to pg
-- What one phase's backlog lane (and the sweep below the floor, and the close) did in a cycle:
-- what messenger._reap_save_floor needs to place the claim floor. _reap_claim fills it, _reap_pair adds the close's part.

BEGIN;

CREATE TYPE messenger.call_reaper_backlog_outcome AS (
    ids          uuid[],        -- the calls the backlog lane claimed, in due order
    keys         timestamptz[], -- their due keys
    upto_key     timestamptz,   -- how far the lane walked (its last claim when full, else its end)
    upto_id      uuid,
    skipped      integer,       -- calls in that range it passed, row-locked by another transaction
    "full"       boolean,       -- it filled the batch's room
    swept        boolean,       -- the sweep below the floor ran and found nothing left there
    deferred     integer,       -- calls of the phase the close left untried (its budget spent)
    deferred_key timestamptz,   -- the first of those up to the backlog lane's end, NULL for none
    deferred_id  uuid,
    talkers      integer,       -- Answered calls not due it (and the sweep) walked past
    talking_since timestamptz   -- the earliest updated_at among them, NULL for none
);

COMMENT ON TYPE messenger.call_reaper_backlog_outcome IS
    'Private: what one reaper phase''s backlog lane, sweep and close did in a cycle; messenger._reap_save_floor places the claim floor from it.';

COMMIT;
