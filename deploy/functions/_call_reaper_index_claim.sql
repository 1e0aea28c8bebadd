-- Deploy call_timeout_reaper:functions/_call_reaper_index_claim to pg

BEGIN;

-- messenger._call_reaper_index_claim(change, on_table, index_name, definition, is_unique, attach_to)
--
-- Called by an index change just before it builds `CREATE [UNIQUE] INDEX <index_name> ON
-- <on_table> <definition>`, in a statement of its own (committed before the build starts).
-- Returns true when the index is not there: it is then recorded in
-- messenger.call_reaper_indexes, so a build that fails or is cancelled is still the reaper's
-- to drop. Otherwise it returns false, and:
--   * the index is the reaper's (recorded with this shape): kept;
--   * it is the product's, valid, of exactly this shape: used as it is, never recorded (so
--     never dropped) - not for a partition's index (attach_to), since an index attached to the
--     reaper's partitioned one is dropped with it;
--   * anything else of that name is refused, SQLSTATE 55000, naming the index, its shape and
--     the one the reaper builds; nothing changes.
-- The shape wanted is what this server makes of the definition: an index built on an empty
-- temporary copy of the table's columns (no lock on the product's table beyond LIKE's read).
CREATE FUNCTION messenger._call_reaper_index_claim(
    p_change     text,
    p_table      regclass,
    p_index      name,
    p_definition text,
    p_unique     boolean DEFAULT false,
    p_attach_to  name    DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- The definition is SQL by design (the index change's own): @plpgsql_check_options: security_warnings = false
DECLARE
    v_schema constant name := (SELECT n.nspname FROM pg_catalog.pg_class AS c
                                 JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                                WHERE c.oid = p_table);
    v_index  constant regclass := pg_catalog.to_regclass(pg_catalog.format('%I.%I', v_schema, p_index));
    v_want   text;
    v_have   text;
    v_on     oid;
    v_valid  boolean;
BEGIN
    EXECUTE pg_catalog.format('CREATE TEMPORARY TABLE call_reaper_index_model (LIKE %s)', p_table);
    EXECUTE pg_catalog.format('CREATE %s INDEX call_reaper_index_model_ix ON pg_temp.call_reaper_index_model %s',
                              CASE WHEN p_unique THEN 'UNIQUE' ELSE '' END, p_definition);
    v_want := messenger._call_reaper_index_shape(pg_catalog.to_regclass('pg_temp.call_reaper_index_model_ix'));
    DROP TABLE pg_temp.call_reaper_index_model;

    IF v_index IS NULL THEN
        INSERT INTO messenger.call_reaper_indexes AS r (index_schema, index_name, on_table, change, shape, attach_to)
        VALUES (v_schema, p_index, p_table::text, p_change, v_want, p_attach_to)
        ON CONFLICT (index_schema, index_name) DO UPDATE
           SET on_table = excluded.on_table, change = excluded.change, shape = excluded.shape,
               attach_to = excluded.attach_to, recorded_at = excluded.recorded_at;
        RETURN true;
    END IF;

    SELECT messenger._call_reaper_index_shape(i.indexrelid), i.indrelid, i.indisvalid
      INTO v_have, v_on, v_valid
      FROM pg_catalog.pg_index AS i WHERE i.indexrelid = v_index;
    IF v_have = v_want AND v_on = p_table::oid THEN
        IF EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                    WHERE (r.index_schema, r.index_name) = (v_schema, p_index) AND r.shape = v_have) THEN
            RETURN false;
        END IF;
        IF v_valid AND p_attach_to IS NULL THEN
            RAISE NOTICE '% is the product''s own index of the reaper''s definition: used as it is, never dropped', v_index;
            RETURN false;
        END IF;
    END IF;
    RAISE EXCEPTION '% is not the reaper''s index; nothing was changed', v_index
        USING ERRCODE = '55000',
              DETAIL = pg_catalog.format('It is %s%s on %s; the reaper''s %s is %s on %s%s.',
                                         v_have, CASE WHEN v_valid THEN '' ELSE ' (INVALID)' END, v_on::regclass,
                                         p_index, v_want, p_table,
                                         CASE WHEN p_attach_to IS NOT NULL THEN pg_catalog.format(', attached to its %s', p_attach_to) ELSE '' END),
              HINT = 'The index is the messenger service''s: rename it, or give it the reaper''s definition (valid), then deploy again.';
END
$$;

REVOKE EXECUTE ON FUNCTION messenger._call_reaper_index_claim(text, regclass, name, text, boolean, name) FROM PUBLIC;

COMMENT ON FUNCTION messenger._call_reaper_index_claim(text, regclass, name, text, boolean, name) IS
$$Before an index build: true = not there, now recorded in call_reaper_indexes (build it); false = the reaper's already (recorded with that shape) or the product's own of the same shape (used, never dropped); anything else of that name is refused with 55000.$$;

COMMIT;
