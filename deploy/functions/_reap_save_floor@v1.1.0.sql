-- Deploy call_timeout_reaper:functions/_reap_save_floor to pg

BEGIN;

-- Contract: leaves one phase's claim floor at (p_key, p_id), the position _reap_phase reached
-- (everything before it closed or quarantined). Writes only when something changed, so an idle
-- cycle over a trusted floor writes nothing:
--   * no position ('-infinity'): a stored floor is deleted (it failed its checks, or is not
--     worth keeping, and nothing replaced it);
--   * the trusted floor's own position and swept flag (p_floor_*): nothing;
--   * otherwise the row is written with its anchor (the call's started_at, so the check finds
--     it in one partition), the cycle's run id and as_of, and call_sessions' VACUUM count.
CREATE OR REPLACE FUNCTION messenger._reap_save_floor(
    p_phase      text,
    p_key        timestamptz,
    p_id         uuid,
    p_floor_key  timestamptz,
    p_floor_id   uuid,
    p_floor_swept boolean,
    p_stored     boolean,
    p_reset_at   timestamptz,
    p_swept      boolean,
    p_passed     bigint,
    p_vacuums    bigint,
    p_run_id     uuid,
    p_as_of      timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_key = '-infinity' THEN
        IF p_stored THEN
            DELETE FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = p_phase;
        END IF;
        RETURN;
    END IF;
    IF (p_key, p_id) = (p_floor_key, p_floor_id) AND p_swept IS NOT DISTINCT FROM p_floor_swept THEN
        RETURN;
    END IF;
    INSERT INTO messenger.call_reaper_claim_floor AS f
           (phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed)
    SELECT p_phase, p_key, p_id, p_reset_at, p_as_of, p_run_id, s.started_at, p_vacuums, p_swept, p_passed
      FROM messenger.call_sessions AS s
     WHERE s.call_id = p_id
     LIMIT 1
    ON CONFLICT ON CONSTRAINT call_reaper_claim_floor_pkey DO UPDATE
       SET due_key = EXCLUDED.due_key, call_id = EXCLUDED.call_id, reset_at = EXCLUDED.reset_at,
           as_of = EXCLUDED.as_of, run_id = EXCLUDED.run_id,
           anchor_started_at = EXCLUDED.anchor_started_at, vacuums = EXCLUDED.vacuums,
           swept = EXCLUDED.swept, passed = EXCLUDED.passed;
    IF NOT FOUND AND p_stored THEN
        -- The anchor went meanwhile: no floor rather than one no check can confirm.
        DELETE FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = p_phase;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_save_floor(text, timestamptz, uuid, timestamptz, uuid, boolean, boolean, timestamptz, boolean, bigint, bigint, uuid, timestamptz) IS
    'Private: move, keep or delete one reaper phase''s claim floor; writes nothing when it did not change.';
REVOKE ALL ON FUNCTION messenger._reap_save_floor(text, timestamptz, uuid, timestamptz, uuid, boolean, boolean, timestamptz, boolean, bigint, bigint, uuid, timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_save_floor(text, timestamptz, uuid, timestamptz, uuid, boolean, boolean, timestamptz, boolean, bigint, bigint, uuid, timestamptz)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
