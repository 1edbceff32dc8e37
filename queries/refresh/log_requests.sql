-- log_requests (views/log_requests.sql), brought up to date with the lines of
-- queries/refresh/changed.sql: one row per request, made from the request's lines, its
-- decisions and its attempts, so the rows of the changed requests are worked out again from
-- theirs and replace the kept ones.
-- A request's earlier lines may be anywhere in the store, and its id cannot narrow a scan
-- (request ids share their first 8 bytes, all DuckDB's zone maps keep of a string). Their
-- times can: every line a kept row was made from has its time between the row's first_ts
-- and last_ts, or no time. So the lines are read from the span of times of the changed
-- requests' kept rows and new lines (refresh_requests_from .. _to), which the zone maps of
-- ts narrow to the day collected, and from the lines without a time.
SET VARIABLE refresh_requests_from = (
    SELECT least(min(first_ts), (SELECT min(ts) FROM {store}.log_events WHERE rowid >= {since}))
    FROM {store}.derived_log_requests WHERE request IN (SELECT request FROM refresh_requests));
SET VARIABLE refresh_requests_to = (
    SELECT greatest(max(last_ts), (SELECT max(ts) FROM {store}.log_events WHERE rowid >= {since}))
    FROM {store}.derived_log_requests WHERE request IN (SELECT request FROM refresh_requests));

-- whether a line can be one of a changed request's: its time in the span, or no time
CREATE OR REPLACE TEMP MACRO refresh_request_line(ts, request) AS
    (ts BETWEEN getvariable('refresh_requests_from') AND getvariable('refresh_requests_to') OR ts IS NULL)
    AND request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW log_events AS
SELECT * FROM {store}.log_events WHERE refresh_request_line(ts, request);

CREATE OR REPLACE TEMP VIEW log_request_lines AS
SELECT * FROM {store}.log_request_lines WHERE refresh_request_line(ts, request);

CREATE OR REPLACE TEMP VIEW log_hedge_decisions AS
SELECT * FROM {store}.log_hedge_decisions WHERE refresh_request_line(ts, request);

CREATE OR REPLACE TEMP VIEW attempts AS
SELECT * FROM {store}.derived_attempts WHERE request IN (SELECT request FROM refresh_requests);

DELETE FROM {store}.derived_log_requests WHERE request IN (SELECT request FROM refresh_requests);

INSERT INTO {store}.derived_log_requests BY NAME SELECT * FROM {store}.log_requests;
