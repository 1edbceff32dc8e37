-- changed: what the log lines stored since a kept table was built can change. Store.derived
-- runs it before queries/refresh/<view>.sql, which works out again only the rows of the
-- kept table derived_<view> that those lines can change, instead of the whole table.
-- The new lines are log_events' rows from rowid {since} on (log_events only grows, its rows
-- in the order stored: see schema 009; {since} is the row count the table was built at).
-- {store}. names the store's own tables and views in full: the scripts narrow some of them by
-- temporary views of the same name, which a name alone (or main.name) would find first.
--   refresh_lines     the new lines (a view: a busy day is millions of them)
--   refresh_nonces    the attempts (escrow, nonce) the new lines name
--   refresh_requests  the requests whose rows can change: those the new lines name, and the
--                     requests of the attempts they name (a line of an attempt without
--                     request= still changes the attempt, and so its race)
CREATE OR REPLACE TEMP VIEW refresh_lines AS
SELECT file_id, line_no, request, escrow, nonce FROM {store}.log_events WHERE rowid >= {since};

CREATE OR REPLACE TEMP TABLE refresh_nonces AS
SELECT DISTINCT escrow, nonce FROM refresh_lines WHERE escrow IS NOT NULL AND nonce IS NOT NULL;

CREATE OR REPLACE TEMP TABLE refresh_requests AS
SELECT request FROM refresh_lines WHERE request IS NOT NULL
UNION
SELECT r.request FROM {store}.log_race_lines r SEMI JOIN refresh_nonces n USING (escrow, nonce)
WHERE r.request IS NOT NULL;
