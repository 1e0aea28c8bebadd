-- Revert call_timeout_reaper:requires/messenger_tables from pg
-- The deploy checked the messenger service's tables, which stay exactly as they are, and found
-- what the reaper's role names held before anything else ran (messenger.call_reaper_found). The
-- last revert of a full revert, so every other change's revert has run: for each of those roles
-- that still exists (one the deploy found, kept by its role revert), each ACL entry found on
-- schemas messenger and cron, the two tables, their columns and sequences that is missing now is
-- granted again by its grantor, and each role setting found (for every database and for this
-- one) is set back, or reset when the role had none of the timeouts the deploy sets. Then the
-- snapshot goes. Without a snapshot (a deploy stopped before it was taken) nothing is given
-- back. A snapshot the reverting role does not own (and no
-- superuser does) is not trusted: the schema's owner could have put one there.

BEGIN;

DO $$
DECLARE
    v_me      name := current_user;
    v_owner   name;
    v_acl     pg_catalog.aclitem[];
    v_now     text;
    v_level   text;
    g         record;
BEGIN
    IF pg_catalog.to_regclass('messenger.call_reaper_found') IS NULL THEN
        RETURN;
    END IF;
    SELECT a.rolname INTO v_owner
      FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_roles AS a ON a.oid = c.relowner
     WHERE c.oid = 'messenger.call_reaper_found'::pg_catalog.regclass AND (a.rolname = v_me OR a.rolsuper);
    IF v_owner IS NULL THEN
        RAISE WARNING 'messenger.call_reaper_found is not owned by % or a superuser: what it lists is not given back', v_me;
        RETURN;
    END IF;

    FOR g IN
        SELECT f.*, a.oid AS role_oid, b.oid AS grantor_oid FROM messenger.call_reaper_found AS f
          JOIN pg_catalog.pg_roles AS a ON a.rolname = f.role
          JOIN pg_catalog.pg_roles AS b ON b.rolname = f.grantor
         WHERE f.kind = 'grant'
           AND CASE f.object_type WHEN 'SCHEMA' THEN pg_catalog.to_regnamespace(f.object_name) IS NOT NULL
                                  ELSE pg_catalog.to_regclass(f.object_name) IS NOT NULL END
         ORDER BY f.object_type, f.object_name, f.column_name, f.role, f.item
    LOOP
        v_acl := CASE
            WHEN g.object_type = 'SCHEMA' THEN
                (SELECT n.nspacl FROM pg_catalog.pg_namespace AS n WHERE n.nspname = g.object_name)
            WHEN g.column_name = '' THEN
                (SELECT c.relacl FROM pg_catalog.pg_class AS c WHERE c.oid = pg_catalog.to_regclass(g.object_name))
            ELSE
                (SELECT a.attacl FROM pg_catalog.pg_attribute AS a
                  WHERE a.attrelid = pg_catalog.to_regclass(g.object_name) AND a.attname = g.column_name
                    AND NOT a.attisdropped)
        END;
        CONTINUE WHEN EXISTS (
            SELECT FROM pg_catalog.aclexplode(v_acl) AS x
             WHERE x.grantee = g.role_oid AND x.grantor = g.grantor_oid
               AND x.privilege_type = g.item AND (x.is_grantable OR NOT g.grantable));
        IF g.column_name <> '' AND NOT EXISTS (
               SELECT FROM pg_catalog.pg_attribute AS a
                WHERE a.attrelid = pg_catalog.to_regclass(g.object_name) AND a.attname = g.column_name
                  AND NOT a.attisdropped) THEN
            CONTINUE;
        END IF;
        -- As the grantor, so the entry comes back as it was (a superuser's or an owner
        -- member's GRANT is recorded as the object owner's).
        IF g.grantor <> v_me AND NOT pg_catalog.pg_has_role(v_me, g.grantor, 'MEMBER') THEN
            RAISE WARNING '% on % % to % (granted by %) not given back: % is not a member of %',
                g.item, g.object_type, g.object_name, g.role, g.grantor, v_me, g.grantor;
            CONTINUE;
        END IF;
        EXECUTE pg_catalog.format('SET LOCAL ROLE %I', g.grantor);
        EXECUTE pg_catalog.format('GRANT %s%s ON %s %s TO %I%s',
            g.item,
            CASE WHEN g.column_name <> '' THEN pg_catalog.format(' (%I)', g.column_name) ELSE '' END,
            g.object_type,
            CASE g.object_type WHEN 'SCHEMA' THEN pg_catalog.quote_ident(g.object_name)
                               ELSE pg_catalog.to_regclass(g.object_name)::text END,
            g.role,
            CASE WHEN g.grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        EXECUTE pg_catalog.format('SET LOCAL ROLE %I', v_me);
    END LOOP;

    FOR g IN
        SELECT f.*, a.oid AS role_oid FROM messenger.call_reaper_found AS f
          JOIN pg_catalog.pg_roles AS a ON a.rolname = f.role
         WHERE f.kind = 'setting'
           AND (f.object_type = '' OR f.object_name = pg_catalog.current_database())
         ORDER BY f.role, f.object_type, f.item
    LOOP
        SELECT pg_catalog.substr(e.entry, pg_catalog.strpos(e.entry, '=') + 1) INTO v_now
          FROM pg_catalog.pg_db_role_setting AS s CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS e (entry)
         WHERE s.setrole = g.role_oid
           AND s.setdatabase = CASE g.object_type WHEN '' THEN 0
                                   ELSE (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = g.object_name) END
           AND pg_catalog.split_part(e.entry, '=', 1) = g.item;
        CONTINUE WHEN v_now IS NOT DISTINCT FROM g.value;
        v_level := CASE g.object_type WHEN '' THEN '' ELSE pg_catalog.format(' IN DATABASE %I', g.object_name) END;
        IF g.value IS NULL THEN
            EXECUTE pg_catalog.format('ALTER ROLE %I%s RESET %I', g.role, v_level, g.item);
        ELSE
            EXECUTE pg_catalog.format('ALTER ROLE %I%s SET %I = %L', g.role, v_level, g.item, g.value);
        END IF;
    END LOOP;
END
$$;

DROP TABLE IF EXISTS messenger.call_reaper_found;

COMMIT;
