-- 001 core: coverage of every source, per epoch where it applies.
-- One row per thing a collector was asked for: what it was, whether it was
-- obtained, from where, at which height, when. Re-collecting replaces the rows of
-- that (source, epoch). "Unknown is not zero": an analysis that finds a
-- 'missing' row reports NULL and says so.
CREATE TABLE coverage (
    source      VARCHAR NOT NULL,   -- chain | accounting | gateway_log | metrics
    epoch       BIGINT,             -- NULL when the item is not tied to one epoch
    item        VARCHAR NOT NULL,   -- e.g. 'epoch_group_data', 'params@settlement', a file path
    status      VARCHAR NOT NULL,   -- ok | missing | partial | skipped
    detail      VARCHAR,
    source_url  VARCHAR,
    height      BIGINT,
    fetched_at  TIMESTAMPTZ NOT NULL
);
