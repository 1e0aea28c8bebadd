-- STAND-IN for the messenger service's own migrations. NEVER run it on a product database.
--
-- The reaper installs beside two tables that belong to the messenger service:
-- messenger.call_sessions and messenger.realtime_outbox. A real installation already has them
-- (the service's migrations made them). This script makes a minimal copy of them for the
-- project's own demos, tests, benchmarks and failover test, owned the way a product owns them:
-- schema and tables belong to the role messenger_service (the service's migrations log in as it;
-- LOGIN, no password here), the application role messenger_app may read and write them, PUBLIC
-- gets nothing. It refuses to run where
-- messenger.call_sessions exists.
--
--   psql -v ON_ERROR_STOP=1 -f stand-in/messenger_service.sql              (text + CHECK)
--   psql -v ON_ERROR_STOP=1 -v types=enum -f stand-in/messenger_service.sql (enum types)
--   psql -v ON_ERROR_STOP=1 -v partitioned=on -f stand-in/messenger_service.sql
--   psql -v ON_ERROR_STOP=1 -v citus=on -f stand-in/messenger_service.sql   (on a Citus coordinator)
--
-- partitioned=on (with either types) makes call_sessions the way a service partitions it in its
-- own migration: range-partitioned by month of started_at (UTC months) and handed to pg_partman
-- 4.7 (CREATE EXTENSION pg_partman SCHEMA partman; Debian postgresql-15-partman): primary key
-- (call_id, started_at), since every unique key of a partitioned table holds the partition
-- key; a DEFAULT partition; `premake` (-v premake=N, default 3) months made ahead. pg_partman's
-- maintenance is a pg_cron job, partman-maintenance-<database>, run as messenger_service: it
-- owns the table (making partitions takes that) and LOGs in, which pg_cron requires of a job's
-- role. It is scheduled from cron.database_name, this database or another one; a server
-- without pg_cron is refused (55000). Nothing of the reaper's does any of this.
--
-- citus=on (with either types; not with partitioned=on) distributes both tables the way a
-- service on Citus does (docs/citus.md): run on the coordinator of a database where the citus
-- extension exists on every node (55000 otherwise). call_sessions is distributed by call_id in
-- -v shard_count=N shards (default 32); realtime_outbox by reference_id (the call), colocated
-- with it, so a call's row and its outbox rows live on one node. A distributed table's unique
-- keys must hold its distribution column, so the outbox's primary key is (reference_id, id)
-- instead of (id); everything else is as in the plain variant. Untested in make test (it needs
-- Citus); docs/citus.md says how it was checked.
--
-- active_index=off leaves out the service's own index of active calls (ix_call_active): a
-- service without one, where the reaper builds its ix_call_due (indexes/ix_call_due); with it,
-- the reaper's claims read ix_call_active and it builds no index of its own.
--
-- Run it as a role that may create roles and the schema (a superuser in the project's
-- throwaway clusters). The reaper's own Sqitch plan (sqitch.plan) never runs it.

\if :{?types}
\else
\set types text
\endif
SELECT :'types' = 'enum' AS enum_types \gset
\if :{?partitioned}
\else
\set partitioned off
\endif
\if :{?premake}
\else
\set premake 3
\endif
\if :{?citus}
\else
\set citus off
\endif
\if :{?active_index}
\else
\set active_index on
\endif
\if :{?shard_count}
\else
\set shard_count 32
\endif
SELECT :'partitioned'::boolean AS partitioned, :'citus'::boolean AS citus,
       pg_catalog.current_database() AS product_database,
       coalesce(pg_catalog.current_setting('cron.database_name', true), '') AS cron_database \gset

BEGIN;
-- A DO block cannot read psql variables.
SET LOCAL stand_in.partitioned = :'partitioned';
SET LOCAL stand_in.citus = :'citus';

DO $$
BEGIN
    IF pg_catalog.to_regclass('messenger.call_sessions') IS NOT NULL THEN
        RAISE EXCEPTION 'messenger.call_sessions exists: this stand-in is for throwaway databases only'
            USING ERRCODE = '55000';
    END IF;
    IF current_setting('stand_in.partitioned')::boolean AND current_setting('cron.database_name', true) IS NULL THEN
        RAISE EXCEPTION 'partitioned=on: pg_partman''s maintenance is a pg_cron job, and this server does not load pg_cron'
            USING ERRCODE = '55000';
    END IF;
    IF current_setting('stand_in.citus')::boolean THEN
        IF current_setting('stand_in.partitioned')::boolean THEN
            RAISE EXCEPTION 'citus=on and partitioned=on: this stand-in makes one or the other'
                USING ERRCODE = '22023';
        END IF;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
            RAISE EXCEPTION 'citus=on: the citus extension does not exist in this database'
                USING ERRCODE = '55000',
                      HINT = 'Run it on a Citus coordinator whose nodes all have CREATE EXTENSION citus in this database.';
        END IF;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_service') THEN
        CREATE ROLE messenger_service LOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_app') THEN
        CREATE ROLE messenger_app LOGIN;
    END IF;
END
$$;

CREATE SCHEMA IF NOT EXISTS messenger AUTHORIZATION messenger_service;
REVOKE ALL ON SCHEMA messenger FROM PUBLIC;
GRANT USAGE ON SCHEMA messenger TO messenger_app;

\if :partitioned
-- pg_partman is no trusted extension: a superuser creates it; the service's role gets what
-- pg_partman's documentation gives the non-superuser that runs it.
CREATE SCHEMA IF NOT EXISTS partman;
CREATE EXTENSION IF NOT EXISTS pg_partman SCHEMA partman;
GRANT ALL ON SCHEMA partman TO messenger_service;
GRANT ALL ON ALL TABLES IN SCHEMA partman TO messenger_service;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA partman TO messenger_service;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA partman TO messenger_service;
GRANT TEMPORARY ON DATABASE :"product_database" TO messenger_service;
-- Maintenance cuts months in its session's TimeZone: UTC, as create_parent below.
ALTER ROLE messenger_service IN DATABASE :"product_database" SET timezone = 'UTC';
\set call_key 'call_id, started_at'
\set partition_by 'PARTITION BY RANGE (started_at)'
\else
\set call_key 'call_id'
\set partition_by ''
\endif
\if :citus
\set outbox_key 'reference_id, id'
\else
\set outbox_key 'id'
\endif

\if :citus
-- Citus would create the enum types on the workers at once, over a connection of
-- messenger_service's, which may not create that role there: made here alone, they reach the
-- workers with the tables, when the script's own role distributes them below.
SET LOCAL citus.enable_ddl_propagation = off;
\endif
SET ROLE messenger_service;

\if :enum_types
CREATE TYPE messenger.call_media_type AS ENUM ('Audio', 'Video');
CREATE TYPE messenger.call_status AS ENUM ('Ringing', 'Answered', 'Ended', 'Missed', 'Declined', 'Failed');
CREATE TYPE messenger.call_end_reason AS ENUM ('Hangup', 'Declined', 'Cancelled', 'Timeout', 'Error');
CREATE TYPE messenger.realtime_dispatch_kind AS ENUM ('CallMissed', 'CallEnded', 'MessageCreated');
CREATE TYPE messenger.realtime_target_kind AS ENUM ('User');
\set media_type messenger.call_media_type
\set status_type messenger.call_status
\set end_reason_type messenger.call_end_reason
\set kind_type messenger.realtime_dispatch_kind
\set target_kind_type messenger.realtime_target_kind
\else
\set media_type text
\set status_type text
\set end_reason_type text
\set kind_type text
\set target_kind_type text
\endif

-- The value sets are CHECKed with enums too (redundant there, harmless): one DDL for both.
CREATE TABLE messenger.call_sessions (
    call_id          uuid        NOT NULL,
    caller_user_id   uuid        NOT NULL,
    callee_user_id   uuid        NOT NULL,
    media_type       :media_type NOT NULL
        CONSTRAINT call_sessions_media_type_check CHECK (media_type IN ('Audio', 'Video')),
    status           :status_type NOT NULL
        CONSTRAINT call_sessions_status_check
        CHECK (status IN ('Ringing', 'Answered', 'Ended', 'Missed', 'Declined', 'Failed')),
    end_reason       :end_reason_type
        CONSTRAINT call_sessions_end_reason_check
        CHECK (end_reason IN ('Hangup', 'Declined', 'Cancelled', 'Timeout', 'Error')),
    started_at       timestamptz NOT NULL,
    answered_at      timestamptz,
    ended_at         timestamptz,
    updated_at       timestamptz NOT NULL,
    duration_seconds integer
        CONSTRAINT call_sessions_duration_seconds_check CHECK (duration_seconds >= 0),
    -- INV-CALL-3: a call is active exactly while it has neither ended_at nor end_reason.
    CONSTRAINT call_sessions_active_has_no_end CHECK (
        (status IN ('Ringing', 'Answered')) = (ended_at IS NULL)
        AND (status IN ('Ringing', 'Answered')) = (end_reason IS NULL)),
    CONSTRAINT call_sessions_answered_at_check CHECK (
        (status NOT IN ('Answered', 'Ended') OR answered_at IS NOT NULL)
        AND (status <> 'Ringing' OR answered_at IS NULL)),
    CONSTRAINT call_sessions_duration_only_ended CHECK (duration_seconds IS NULL OR status = 'Ended'),
    CONSTRAINT call_sessions_pkey PRIMARY KEY (:call_key)
) :partition_by;
COMMENT ON TABLE messenger.call_sessions IS
    'One row per call. Active = Ringing or Answered; every other status is terminal (INV-CALL-3).';

-- The service's own lookups of active calls ("my active call", backlog counts).
\if :active_index
CREATE INDEX ix_call_active ON messenger.call_sessions (status, started_at)
    WHERE status IN ('Ringing', 'Answered');
\endif

\if :partitioned
-- Monthly partitions from this month to `premake` months ahead, cut in UTC, and the DEFAULT
-- partition; maintenance keeps making months ahead even while no call is written
-- (infinite_time_partitions).
SET LOCAL TimeZone = 'UTC';
SELECT partman.create_parent(p_parent_table => 'messenger.call_sessions', p_control => 'started_at',
                             p_type => 'native', p_interval => 'monthly', p_premake => :premake,
                             p_jobmon => false) AS partitioned_by_partman \gset
UPDATE partman.part_config SET infinite_time_partitions = true WHERE parent_table = 'messenger.call_sessions';
RESET TimeZone;
\endif

CREATE TABLE messenger.realtime_outbox (
    id             bigint      GENERATED ALWAYS AS IDENTITY,
    kind           :kind_type  NOT NULL,
    target_kind    :target_kind_type NOT NULL
        CONSTRAINT realtime_outbox_target_kind_check CHECK (target_kind IN ('User')),
    target_id      text        NOT NULL,
    reference_id   uuid        NOT NULL,
    payload        jsonb       NOT NULL,
    correlation_id uuid,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    dispatched_at  timestamptz,
    CONSTRAINT realtime_outbox_user_target_check CHECK (
        target_kind <> 'User' OR target_id ~ '^user:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
    -- Call events carry ids and enums only (no PII): exactly these three keys, nothing else.
    CONSTRAINT realtime_outbox_call_payload_check CHECK (
        kind NOT IN ('CallMissed', 'CallEnded')
        OR (jsonb_typeof(payload) = 'object'
            AND payload ?& ARRAY['callId', 'status', 'mediaType']
            AND payload - ARRAY['callId', 'status', 'mediaType'] = '{}'::jsonb)),
    CONSTRAINT realtime_outbox_pkey PRIMARY KEY (:outbox_key)
);
COMMENT ON TABLE messenger.realtime_outbox IS
    'Realtime push intents, one row per (event, recipient), delivered by realtime-dispatch in id order.';

-- The dispatcher's queue: undelivered rows in dispatch order.
CREATE INDEX ix_realtime_outbox_pending ON messenger.realtime_outbox (id)
    WHERE dispatched_at IS NULL;

GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_sessions, messenger.realtime_outbox TO messenger_app;

RESET ROLE;

\if :citus
SET LOCAL citus.enable_ddl_propagation = on;
-- Distributed last, so the shards are made with every constraint, index and grant above. As
-- the role that ran this script: Citus reaches the workers as the current role, over new
-- connections that cannot see the roles this transaction made.
SELECT pg_catalog.create_distributed_table('messenger.call_sessions', 'call_id',
                                           shard_count => :shard_count) AS call_sessions_distributed \gset
SELECT pg_catalog.create_distributed_table('messenger.realtime_outbox', 'reference_id',
                                           colocate_with => 'messenger.call_sessions') AS realtime_outbox_distributed \gset
\endif
COMMIT;

\if :partitioned
-- pg_cron keeps its jobs in cron.database_name and runs each in the database it names. One job
-- per product database (a job's name is unique per role).
SELECT :'cron_database' = :'product_database' AS cron_here,
       'partman-maintenance-' || :'product_database' AS partman_job \gset
\if :cron_here
\else
\connect :cron_database
\endif
SET client_min_messages = warning;  -- not the NOTICE that pg_cron exists
CREATE EXTENSION IF NOT EXISTS pg_cron;
RESET client_min_messages;
SELECT cron.schedule_in_database(:'partman_job', '7 3 * * *',
                                 'CALL partman.run_maintenance_proc(p_jobmon => false)',
                                 :'product_database', 'messenger_service') AS partman_jobid \gset
\if :cron_here
\else
\connect :product_database
\endif
\endif
