-- hedge_attempts (views/hedge_attempts.sql), brought up to date with the lines of
-- queries/refresh/changed.sql. Its rows are the attempts of a request, with facts of their
-- race and the escalation lines of the request: the rows of the changed requests are worked
-- out again from their attempts (derived_attempts, already up to date) and replace the kept
-- ones. Their rows as they were are kept for this connection (refresh_hedge_attempts_before):
-- queries/refresh/hedge_priors.sql needs the times of the samples they change.
CREATE OR REPLACE TEMP TABLE refresh_hedge_attempts_before AS
SELECT request, first_token_ts, race_ts FROM {store}.derived_hedge_attempts
WHERE request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW attempts AS
SELECT * FROM {store}.derived_attempts WHERE request IN (SELECT request FROM refresh_requests);

CREATE OR REPLACE TEMP VIEW log_escalations AS
SELECT * FROM {store}.log_escalations WHERE request IN (SELECT request FROM refresh_requests);

DELETE FROM {store}.derived_hedge_attempts WHERE request IN (SELECT request FROM refresh_requests);

INSERT INTO {store}.derived_hedge_attempts BY NAME SELECT * FROM {store}.hedge_attempts;
