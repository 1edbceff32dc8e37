-- 011 derived tables: rows of a view over the gateway logs kept in the store, so that an
-- analysis does not work them out again from log_events every run (Store.derived). The
-- table derived_<view> itself is created from the view (its columns are the view's), so it
-- is not declared here; this records what each was built from.
--   name          the view (queries/views/<name>.sql)
--   views_digest  schema_views.digest when it was built: the definitions it follows
--   log_events    rows in log_events when it was built (log_events only grows, see 009)
-- A derived table whose row here differs from the store's present digest and row count is
-- stale and is rebuilt before it is read.
CREATE TABLE derived_state (
    name          VARCHAR PRIMARY KEY,
    views_digest  VARCHAR NOT NULL,
    log_events    BIGINT NOT NULL,
    built_at      TIMESTAMPTZ NOT NULL
);
