-- Deploy call_timeout_reaper:tables/call_reaper_indexes to pg
-- The indexes the reaper builds on the messenger service's tables, one row each, written by
-- messenger._call_reaper_index_claim BEFORE the build starts (its own committed statement), so
-- a build that fails or is cancelled half-way is still known as the reaper's. An index is the
-- reaper's when its name has a row here AND its shape (messenger._call_reaper_index_shape) is
-- the recorded one: never by name alone. The reverts drop what this table lists and nothing
-- else; a record whose index is gone, or has another shape now, is forgotten.

BEGIN;

CREATE TABLE messenger.call_reaper_indexes (
    index_schema name        NOT NULL,
    index_name   name        NOT NULL,
    on_table     text        NOT NULL,
    change       text        NOT NULL,
    shape        text        NOT NULL,
    attach_to    name,
    recorded_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (index_schema, index_name)
);

COMMENT ON TABLE messenger.call_reaper_indexes IS
    'Indexes the reaper built (or is building) on the product''s tables, recorded before each build: the Sqitch change, the shape it was built with, and for a partition''s index the reaper''s partitioned index it is attached to. The reverts drop these and nothing else.';

COMMIT;
