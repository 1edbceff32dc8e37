-- hedge_races (views/hedge_races.sql), brought up to date with the lines of
-- queries/refresh/changed.sql: one row per request, made from its hedge_attempts rows, so the
-- rows of the changed requests are worked out again from theirs (derived_hedge_attempts,
-- already up to date) and replace the kept ones.
CREATE OR REPLACE TEMP VIEW hedge_attempts AS
SELECT * FROM {store}.derived_hedge_attempts WHERE request IN (SELECT request FROM refresh_requests);

DELETE FROM {store}.derived_hedge_races WHERE request IN (SELECT request FROM refresh_requests);

INSERT INTO {store}.derived_hedge_races BY NAME SELECT * FROM {store}.hedge_races;
