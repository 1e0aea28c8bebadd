-- Deploy call_timeout_reaper:tables/call_reaper_footprint to pg
-- What this release's changes set on objects that are not the reaper's own (a grant on the
-- product's schema, an option of the product's table), one row each, written in the same
-- transaction as the change: the revert of that change undoes exactly its rows, so a grant or an
-- option that was there before the deploy, or that the messenger service set since, stays.
-- Owned by the deploying role, no grant to anyone: no role the deploy creates, and no code that
-- runs as one (the SECURITY DEFINER routines, the product's triggers inside them), can change
-- what a revert will remove. The reaper's routines never read it.

BEGIN;

CREATE TABLE messenger.call_reaper_footprint (
    kind   text NOT NULL CHECK (kind IN ('grant', 'reloption')),
    target text NOT NULL,   -- 'SCHEMA messenger', 'TABLE messenger.call_sessions'
    item   text NOT NULL,   -- 'USAGE TO messenger_call_reaper_operator', 'autovacuum_vacuum_threshold=1000'
    set_by text NOT NULL,   -- the change whose revert undoes it
    PRIMARY KEY (kind, target, item)
);
COMMENT ON TABLE messenger.call_reaper_footprint IS
    'What the call-timeout reaper set on objects that are not its own (a grant, a table option): its revert undoes exactly these rows.';
REVOKE ALL ON messenger.call_reaper_footprint FROM PUBLIC;

COMMIT;
