"""The reaper installs beside the messenger service's own tables and gives them back untouched.

Each test makes a database whose call_sessions and realtime_outbox the stand-in of the service's
migrations created (owned by messenger_service), with a column and an index of the service's own
and rows in both tables, then deploys the reaper with sqitch as a DBA would (no pg_cron in these
databases: --set scheduler=none). Checked:
- text + CHECK and the service's own enum types both deploy, verify and reap (hand-run cycle);
- revert leaves every product object (tables, columns, indexes, constraints, triggers, owners,
  grants, options) exactly as before the deploy and every row as it was before the revert, the
  outbox rows the reaper wrote included;
- tables that do not meet the contract are refused (55000), one line per mismatch, nothing changed:
  every kind the check knows (a column's type, a missing column, a NOT NULL column the reaper's
  INSERT leaves without a default, a json payload, a generated column the reaper writes, a NOT
  NULL duration_seconds, no unique key on call_id, a missing table, a missing schema), and a
  `scheduler` value that is neither pg_cron nor none;
- duplicate call events in the outbox stop the deploy before anything is built (23505), with
  the query that lists them;
- roles under the reaper's names that it would not create are refused (55000), one line per
  mismatch, nothing changed; an upgrade is refused before it would revoke the owner role's
  CREATE on messenger;
- revert keeps a grant an adopted role held before the deploy, and resets only the autovacuum
  option still holding the reaper's value.
"""

from __future__ import annotations

import re

import psycopg
import pytest
from adoption_support import (
    ROOT,
    create_product_database,
    product_objects,
    product_rows,
    psql,
    reaper_objects,
    role_facts,
    sqitch,
)
from reaper_facts import JOB_ROLE, MONITOR_ROLE, OPERATOR_ROLE, OWNER_ROLE

NO_CRON = ("--set", "scheduler=none")

# What the service has beside the stand-in: its own column, index and trigger, and rows.
PRODUCT_EXTRAS = """
ALTER TABLE messenger.call_sessions ADD COLUMN region text NOT NULL DEFAULT 'eu';
CREATE INDEX call_sessions_caller_idx ON messenger.call_sessions (caller_user_id, started_at);
CREATE FUNCTION messenger.touch_outbox() RETURNS trigger LANGUAGE plpgsql AS
    $$BEGIN NEW.created_at := coalesce(NEW.created_at, now()); RETURN NEW; END$$;
CREATE TRIGGER realtime_outbox_touch BEFORE INSERT ON messenger.realtime_outbox
    FOR EACH ROW EXECUTE FUNCTION messenger.touch_outbox();
ALTER TABLE messenger.call_sessions OWNER TO messenger_service;
ALTER FUNCTION messenger.touch_outbox() OWNER TO messenger_service;
"""


def seed(conn: psycopg.Connection, calls: int, due: int, outbox: int) -> None:
    """`calls` calls, of which `due` are Ringing past the ring timeout (the rest ended), and
    `outbox` undelivered rows of another kind. Literals only, so enum columns take them."""
    conn.execute(f"""
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
                started_at, answered_at, ended_at, updated_at)
        SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup',
               now() - g * interval '1 second', now() - g * interval '1 second',
               now() - g * interval '1 second', now() - g * interval '1 second'
          FROM generate_series(1, {calls - due}) AS g""")
    conn.execute(f"""
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
        SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Ringing',
               now() - interval '10 minutes' - g * interval '1 second', now() - interval '10 minutes'
          FROM generate_series(1, {due}) AS g""")
    conn.execute(f"""
        INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
        SELECT 'MessageCreated', 'User', 'user:' || gen_random_uuid(), gen_random_uuid(), '{{}}'
          FROM generate_series(1, {outbox})""")
    conn.execute("ANALYZE messenger.call_sessions, messenger.realtime_outbox")


@pytest.mark.parametrize("types,calls", [("text", 200_000), ("enum", 20_000)])
def test_deploy_beside_product_tables_reap_and_revert_keeps_everything(conn, types, calls):
    db = f"adopt_{types}"
    dsn = create_product_database(conn, db, types)
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(PRODUCT_EXTRAS)
        seed(product, calls=calls, due=300, outbox=1000)
        objects_before = product_objects(product)
        rows_before = product_rows(product)

        sqitch("deploy", db, *NO_CRON)
        sqitch("verify", db, *NO_CRON)
        assert product_rows(product) == rows_before, "the deploy changed a product row"
        owner = product.execute("SELECT pg_get_userbyid(relowner) FROM pg_class"
                                " WHERE oid = 'messenger.call_sessions'::regclass").fetchone()[0]
        assert owner == "messenger_service", "the deploy took over the product's table"
        # The service's own index of active calls is the one the claims read, on this status type.
        assert product.execute("SELECT array_agg(x::text), to_regclass('messenger.ix_call_due')"
                               "  FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x"
                               ).fetchone() == (["messenger.ix_call_active"], None)

        # The backlog as the exporter and the DBA's script count it, on these column types.
        assert product.execute("SELECT backlog_ring_timeout, backlog_stale_answered"
                               "  FROM messenger.call_reaper_metrics()").fetchone() == (300, 0)
        backlog = psql(db, "-A", "-t", "-F", "|", "-f", str(ROOT / "sql" / "backlog.sql")).stdout.split()
        assert [line.split("|")[:3] for line in backlog] == [["ring_timeout", "300", "0"]]

        # The reaper works on these tables as they are: one hand-run cycle closes the 300 due calls.
        cycle = product.execute("SELECT missed_count, poisoned_count FROM messenger.reap_call_timeouts(batch_size => 1000)").fetchone()
        assert cycle == (300, 0)
        pushed = product.execute("""
            SELECT count(*), count(DISTINCT reference_id), bool_and(payload ? 'callId' AND kind::text = 'CallMissed')
              FROM messenger.realtime_outbox WHERE correlation_id IS NOT NULL""").fetchone()
        assert pushed == (300, 300, True)
        assert product.execute("SELECT count(*) FROM messenger.call_sessions WHERE status::text = 'Missed'").fetchone()[0] == 300

        rows_before_revert = product_rows(product)
        sqitch("revert", db, "-y")
        assert reaper_objects(product) == [], "revert left something of the reaper behind"
        assert product_objects(product) == objects_before, "revert changed a product object"
        assert product_rows(product) == rows_before_revert, \
            "revert changed or removed a product row (the outbox rows the reaper wrote are pushes still to deliver)"
        print(f"\n{types}: {calls} calls, 300 closed by a hand-run cycle; revert kept "
              f"{rows_before_revert[0]} calls and {rows_before_revert[2]} outbox rows, "
              f"{len(objects_before)} product facts unchanged")
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


MISMATCHED = """
ALTER TABLE messenger.call_sessions ALTER COLUMN started_at TYPE timestamp;
ALTER TABLE messenger.call_sessions DROP COLUMN updated_at;
ALTER TABLE messenger.realtime_outbox ADD COLUMN tenant_id bigint NOT NULL;
ALTER TABLE messenger.realtime_outbox DROP CONSTRAINT realtime_outbox_call_payload_check;
ALTER TABLE messenger.realtime_outbox ALTER COLUMN payload TYPE json;
"""


def test_tables_that_break_the_contract_are_refused_line_by_line_and_nothing_changes(conn):
    db = "adopt_mismatch"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(MISMATCHED)
        objects_before = product_objects(product)
        done = sqitch("deploy", db, *NO_CRON, check=False)
        assert done.returncode != 0
        out = done.stdout + done.stderr
        assert "do not meet what the reaper relies on (4 mismatches); nothing was changed" in out, out
        for line in ("messenger.call_sessions.started_at is timestamp without time zone",
                     "messenger.call_sessions.updated_at does not exist",
                     "messenger.realtime_outbox.tenant_id is NOT NULL without a default",
                     "messenger.realtime_outbox.payload is json"):
            assert line in out, f"no line for: {line}\n{out}"
        assert product_objects(product) == objects_before
        assert reaper_objects(product) == []
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


MISMATCHED_MORE = """
ALTER TABLE messenger.realtime_outbox DROP COLUMN correlation_id;
ALTER TABLE messenger.realtime_outbox ADD COLUMN correlation_id uuid GENERATED ALWAYS AS (reference_id) STORED;
ALTER TABLE messenger.call_sessions ALTER COLUMN duration_seconds SET NOT NULL;
ALTER TABLE messenger.call_sessions DROP CONSTRAINT call_sessions_pkey;
"""


def _refused(product, db: str, *lines: str, args: tuple[str, ...] = NO_CRON) -> None:
    """A deploy refused with every line given, the product unchanged and nothing of the reaper
    made (without a schema messenger: none was made)."""
    schema = product.execute("SELECT to_regnamespace('messenger') IS NOT NULL").fetchone()[0]
    objects_before = product_objects(product) if schema else None
    done = sqitch("deploy", db, *args, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    for line in lines:
        assert line in out, f"no line for: {line}\n{out}"
    if schema:
        assert product_objects(product) == objects_before
        assert reaper_objects(product) == []
    else:
        assert product.execute("SELECT to_regnamespace('messenger') IS NULL").fetchone()[0]


def test_the_other_mismatches_are_refused_too_and_nothing_changes(conn):
    db = "adopt_mismatch_more"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        _refused(product, db, "scheduler must be pg_cron or none, got cron", args=("--set", "scheduler=cron"))
        product.execute(MISMATCHED_MORE)
        _refused(product, db,
                 "do not meet what the reaper relies on (3 mismatches); nothing was changed",
                 "messenger.realtime_outbox.correlation_id is a generated column: the reaper writes it",
                 "messenger.call_sessions.duration_seconds is NOT NULL: a failed call has none",
                 "messenger.call_sessions has no unique key on call_id (or on call_id, started_at)")
        product.execute("DROP TABLE messenger.realtime_outbox")
        _refused(product, db, "table messenger.realtime_outbox does not exist")
        product.execute("DROP SCHEMA messenger CASCADE")
        # The documented 55000 with a DETAIL line per missing object, not a 3F000 from a
        # regclass cast planned before the check could list anything.
        _refused(product, db,
                 "do not meet what the reaper relies on (3 mismatches); nothing was changed",
                 "DETAIL:  schema messenger does not exist",
                 "table messenger.call_sessions does not exist",
                 "table messenger.realtime_outbox does not exist")
        out = sqitch("deploy", db, *NO_CRON, check=False)
        assert not re.search(r'schema "messenger" does not exist', out.stdout + out.stderr), out.stdout + out.stderr
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_an_enum_without_a_label_the_reaper_writes_is_refused(conn):
    db = "adopt_enum_labels"
    dsn = create_product_database(conn, db, "enum")
    with psycopg.connect(dsn, autocommit=True) as product:
        # A service whose kinds do not include CallEnded: the reaper could never push one.
        product.execute("""
            ALTER TABLE messenger.realtime_outbox DROP CONSTRAINT realtime_outbox_call_payload_check;
            CREATE TYPE messenger.kind_v2 AS ENUM ('CallMissed', 'MessageCreated');
            ALTER TABLE messenger.realtime_outbox ALTER COLUMN kind TYPE messenger.kind_v2 USING kind::text::messenger.kind_v2""")
        done = sqitch("deploy", db, *NO_CRON, check=False)
        out = done.stdout + done.stderr
        assert done.returncode != 0
        assert ("messenger.realtime_outbox.kind is messenger.kind_v2, the reaper needs text, varchar"
                " or an enum with the labels CallMissed, CallEnded") in out, out
        assert reaper_objects(product) == []
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_duplicate_call_events_stop_the_deploy_before_anything_is_built(conn):
    db = "adopt_duplicates"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        call = product.execute("SELECT gen_random_uuid()").fetchone()[0]
        for _ in range(2):
            product.execute("""
                INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
                VALUES ('CallMissed', 'User', 'user:00000000-0000-0000-0000-000000000001', %s,
                        jsonb_build_object('callId', %s::text, 'status', 'Missed', 'mediaType', 'Audio'))""",
                            (call, call))
        objects_before = product_objects(product)
        rows_before = product_rows(product)
        done = sqitch("deploy", db, *NO_CRON, check=False)
        out = done.stdout + done.stderr
        assert done.returncode != 0
        assert "holds 1 (kind, reference_id, target_id) groups" in out, out
        assert "List them with: SELECT kind, reference_id, target_id" in out, out
        # Sqitch reverted the changes before the failing one: nothing of the reaper is left,
        # the product is as it was, and no index (valid or not) was built.
        assert reaper_objects(product) == []
        assert product_objects(product) == objects_before
        assert product_rows(product) == rows_before
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_roles_it_would_not_create_are_refused_line_by_line_and_nothing_changes(conn):
    """The four roles exist already (the deploy into the pg_cron database made them), so a deploy
    here adopts them: each made into what the reaper would never create is one DETAIL line."""
    db = "adopt_roles"
    stranger = "adopt_roles_stranger"
    dsn = create_product_database(conn, db, "text")
    conn.execute(f"DROP ROLE IF EXISTS {stranger}")
    conn.execute(f"CREATE ROLE {stranger} NOLOGIN")
    changes = [
        (f"ALTER ROLE {OWNER_ROLE} LOGIN", f"ALTER ROLE {OWNER_ROLE} NOLOGIN"),
        (f"GRANT {OWNER_ROLE} TO {stranger}", f"REVOKE {OWNER_ROLE} FROM {stranger}"),
        (f"ALTER ROLE {JOB_ROLE} REPLICATION", f"ALTER ROLE {JOB_ROLE} NOREPLICATION"),
        (f"ALTER ROLE {MONITOR_ROLE} SUPERUSER", f"ALTER ROLE {MONITOR_ROLE} NOSUPERUSER"),
        (f"GRANT pg_read_all_data TO {MONITOR_ROLE}", f"REVOKE pg_read_all_data FROM {MONITOR_ROLE}"),
        (f"ALTER ROLE {OPERATOR_ROLE} BYPASSRLS", f"ALTER ROLE {OPERATOR_ROLE} NOBYPASSRLS"),
    ]
    try:
        for change, _ in changes:
            conn.execute(change)
        with psycopg.connect(dsn, autocommit=True) as product:
            objects_before, roles_before = product_objects(product), role_facts(product)
            done = sqitch("deploy", db, *NO_CRON, check=False)
            out = done.stdout + done.stderr
            assert done.returncode != 0, out
            assert "roles under the reaper's names are not roles it would create (6 mismatches); nothing was changed" in out, out
            for line in (f"role {JOB_ROLE} has REPLICATION",
                         f"role {MONITOR_ROLE} is SUPERUSER",
                         f"role {MONITOR_ROLE} is a member of pg_read_all_data, which the reaper never grants",
                         f"role {OPERATOR_ROLE} has BYPASSRLS",
                         f"role {OWNER_ROLE} can LOGIN; the reaper's is NOLOGIN",
                         f"role {OWNER_ROLE} has member {stranger}, which the reaper did not make one"):
                assert line in out, f"no line for: {line}\n{out}"
            assert reaper_objects(product) == []
            assert product_objects(product) == objects_before
            assert role_facts(product) == roles_before
    finally:
        for _, undo in reversed(changes):
            conn.execute(undo)
        conn.execute(f"DROP ROLE {stranger}")
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_a_deploy_resumed_after_the_owner_role_may_create_in_messenger_is_refused_and_keeps_that_grant(conn):
    """Every routine change grants the owner role CREATE on messenger for its ALTER ... OWNER and
    revokes it: a database deployed part way (up to the roles), where the service has granted
    that since, is refused by requires/call_reaper_roles before a later change revokes a grant
    the reaper never made."""
    db = "adopt_resumed_create"
    dsn = create_product_database(conn, db, "text")
    create = f"SELECT has_schema_privilege('{OWNER_ROLE}', 'messenger', 'CREATE')"
    with psycopg.connect(dsn, autocommit=True) as product:
        sqitch("deploy", db, "--to", "requires/call_reaper_roles^", *NO_CRON)
        product.execute(f"GRANT CREATE ON SCHEMA messenger TO {OWNER_ROLE}")
        objects_before = product_objects(product)
        done = sqitch("deploy", db, *NO_CRON, check=False)
        out = done.stdout + done.stderr
        assert done.returncode != 0, out
        assert (f"role {OWNER_ROLE} may CREATE in schema messenger; the reaper's routine changes"
                " would revoke that grant") in out, out
        assert product.execute(create).fetchone() == (True,), "the refused upgrade revoked the service's grant"
        assert product_objects(product) == objects_before
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_revert_keeps_a_grant_an_adopted_role_held_before_the_deploy(conn):
    """The operator role exists already (adopted here) and the service had given it USAGE on
    messenger: the deploy finds it and grants nothing, so the revert revokes nothing."""
    db = "adopt_kept_grant"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(f"GRANT USAGE ON SCHEMA messenger TO {OPERATOR_ROLE}")
        objects_before = product_objects(product)
        sqitch("deploy", db, *NO_CRON)
        assert product.execute(
            "SELECT count(*) FROM messenger.call_reaper_footprint WHERE kind = 'grant' AND item = %s",
            [f"USAGE TO {OPERATOR_ROLE}"]).fetchone() == (0,), "the deploy recorded a grant it did not make"
        sqitch("revert", db, "-y")
        assert product.execute(f"SELECT has_schema_privilege('{OPERATOR_ROLE}', 'messenger', 'USAGE')"
                               ).fetchone() == (True,), "revert revoked a grant the deploy found"
        assert product_objects(product) == objects_before
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_revert_resets_the_option_it_set_and_keeps_the_one_the_service_changed(conn):
    db = "adopt_autovacuum"
    dsn = create_product_database(conn, db, "text")
    options = "SELECT reloptions FROM pg_class WHERE oid = 'messenger.call_sessions'::regclass"
    with psycopg.connect(dsn, autocommit=True) as product:
        assert product.execute(options).fetchone() == (None,)
        sqitch("deploy", db, *NO_CRON)
        product.execute("ALTER TABLE messenger.call_sessions SET (autovacuum_vacuum_scale_factor = 0.05)")
        sqitch("revert", db, "-y")
        assert product.execute(options).fetchone() == (["autovacuum_vacuum_scale_factor=0.05"],), \
            "revert must reset the reaper's threshold and keep the service's scale factor"
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_revert_keeps_grants_of_adopted_roles_that_the_reaper_never_makes(conn):
    """The released role and grant reverts revoke by name, and a table-level REVOKE takes every
    column's privilege too. What the reaper never grants (a column's SELECT or INSERT, a grant
    option) can only be the service's: the revert leaves it as found."""
    db = "adopt_kept_kinds"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(f"""
            GRANT SELECT (call_id, status) ON messenger.call_sessions TO {OWNER_ROLE};
            GRANT INSERT (payload) ON messenger.realtime_outbox TO {OWNER_ROLE};
            GRANT USAGE ON SCHEMA messenger TO {JOB_ROLE} WITH GRANT OPTION;
            GRANT USAGE ON SCHEMA messenger TO {MONITOR_ROLE} WITH GRANT OPTION""")
        objects_before = product_objects(product)
        sqitch("deploy", db, *NO_CRON)
        sqitch("revert", db, "-y")
        assert product_objects(product) == objects_before, "revert took a grant the reaper never makes"
        assert product.execute(f"SELECT has_table_privilege('{OWNER_ROLE}', 'messenger.call_sessions', 'SELECT'),"
                               f" has_table_privilege('{OWNER_ROLE}', 'messenger.realtime_outbox', 'INSERT')"
                               ).fetchone() == (False, False), "revert left the reaper's table grants"
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
