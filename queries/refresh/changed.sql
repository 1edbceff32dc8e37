-- changed: what the log lines stored since a kept table was built can change. Store.derived
-- runs it before queries/refresh/<view>.sql, which works out again only the rows of the
-- kept table derived_<view> that those lines can change, instead of the whole table.
-- The new lines are log_events' rows from rowid {since} on (log_events only grows, its rows
-- in the order stored: see schema 009; {since} is the row count the table was built at).
-- {store}. names the store's own tables and views in full: the scripts narrow some of them by
-- temporary views of the same name, which a name alone (or main.name) would find first.
--   refresh_lines     the new lines (a view: a busy day is millions of them)
--   refresh_new_line(file_id, line_no)  whether a line can be one of the new lines: at or after
--                     their first file and their first line number. A line table's rows are
--                     narrowed by it before they are matched to the new lines: zone maps then
--                     skip the days stored before (a day's log a new file, or a file grown)
--   refresh_nonces    the attempts (escrow, nonce) the new lines name
--   refresh_requests  the requests whose rows can change: those the new lines name, and the
--                     requests of the attempts they name (a line of an attempt without
--                     request= still changes the attempt, and so its race)
CREATE OR REPLACE TEMP VIEW refresh_lines AS
SELECT file_id, line_no, request, escrow, nonce FROM {store}.log_events WHERE rowid >= {since};

SET VARIABLE refresh_first_file = (SELECT min(file_id) FROM refresh_lines);
SET VARIABLE refresh_first_line = (SELECT min(line_no) FROM refresh_lines);
CREATE OR REPLACE TEMP MACRO refresh_new_line(file_id, line_no) AS
    file_id >= getvariable('refresh_first_file') AND line_no >= getvariable('refresh_first_line');

CREATE OR REPLACE TEMP TABLE refresh_nonces AS
SELECT DISTINCT escrow, nonce FROM refresh_lines WHERE escrow IS NOT NULL AND nonce IS NOT NULL;

CREATE OR REPLACE TEMP TABLE refresh_requests AS
SELECT request FROM refresh_lines WHERE request IS NOT NULL
UNION
SELECT r.request FROM {store}.log_race_lines r SEMI JOIN refresh_nonces n USING (escrow, nonce)
WHERE r.request IS NOT NULL;
