-- Deploy call_timeout_reaper:tables/call_reaper_cron_jobs to pg
-- The reaper's pg_cron jobs as the cron/ changes scheduled them, one row per job, written by
-- those changes in this (the product's) database. pg_cron keeps its jobs in cron.database_name
-- only; when that is another database (cron.schedule_in_database, README "Server settings"),
-- this database has no cron.job at all, and this row is all it knows of its jobs: their name
-- (a second product database on the cluster gets the fixed job names suffixed, docs/design.md
-- "Scheduling"), where they are kept, their schedule and the pg_cron version they were
-- scheduled on. call_reaper_status(), the settings guard and the warden read it; the cron/
-- reverts unschedule exactly the job named here, in cron_database, for this database.
-- Owned by the deploying role, no grant to anyone (as call_reaper_footprint): no role the
-- deploy creates can change what a revert will unschedule.

BEGIN;

CREATE TABLE messenger.call_reaper_cron_jobs (
    kind          text NOT NULL PRIMARY KEY CHECK (kind IN ('reaper', 'purge', 'warden')),
    jobname       text NOT NULL,
    cron_database name NOT NULL,
    schedule      text NOT NULL,
    cron_version  text NOT NULL
);
COMMENT ON TABLE messenger.call_reaper_cron_jobs IS
    'The call-timeout reaper''s pg_cron jobs as its deploy scheduled them: name, the database pg_cron keeps them in, schedule, pg_cron version.';
REVOKE ALL ON messenger.call_reaper_cron_jobs FROM PUBLIC;

COMMIT;
