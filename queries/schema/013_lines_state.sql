-- 013 line tables: typed rows of one kind of gateway log line (queries/lines/<name>.sql, one
-- row per line, its JSON fields read once), kept in the store so that no analysis parses the
-- fields of log_events again (issue 21). The tables themselves are created from their
-- definitions (their columns are the SELECT's), so they are not declared here; this records,
-- per table, the definition it was made from and how far it has read log_events.
--   name       the line table (queries/lines/<name>.sql)
--   digest     sha256 of its definition when it was made; another digest: it is made again
--   rows_read  log_events rows it has read: rows are only ever appended (009), in order, so
--              the rows it has not read are those with rowid >= rows_read
CREATE TABLE lines_state (
    name       VARCHAR PRIMARY KEY,
    digest     VARCHAR NOT NULL,
    rows_read  BIGINT NOT NULL
);
