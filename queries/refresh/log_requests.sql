-- log_requests (views/log_requests.sql), brought up to date with the lines of
-- queries/refresh/changed.sql: one row per request, made from the request's lines, its
-- decisions and its attempts, so the rows of the changed requests are worked out again from
-- theirs and replace the kept ones. (Finding a request's lines reads log_events' request
-- column whole: a request's earlier lines may be anywhere in the store.)
CREATE OR REPLACE TEMP VIEW log_events AS
SELECT * FROM {store}.log_events WHERE request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW log_request_lines AS
SELECT * FROM {store}.log_request_lines WHERE request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW log_hedge_decisions AS
SELECT * FROM {store}.log_hedge_decisions WHERE request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW attempts AS
SELECT * FROM {store}.derived_attempts WHERE request IN (SELECT request FROM refresh_requests);

DELETE FROM {store}.derived_log_requests WHERE request IN (SELECT request FROM refresh_requests);

INSERT INTO {store}.derived_log_requests BY NAME SELECT * FROM {store}.log_requests;
