-- hedge_priors (views/hedge_priors.sql), brought up to date with the lines of
-- queries/refresh/changed.sql. A race's row is made from the samples of its host in the hour
-- before the race, so a sample that changed at time t changes the rows of the races in
-- (t, t + 1 h]. The changed samples and races are the hedge_attempts rows of the changed
-- requests, as they were (refresh_hedge_attempts_before, kept by queries/refresh/hedge_attempts.sql,
-- which runs first) and as they are. refresh_priors_span runs from the earliest of their
-- times to an hour after the latest sample (or the latest race): every race in it is worked
-- out again, over the rows of the span and of the hour before it (contiguous in time, so
-- each race's window is whole) and of the requests of its races, and replaces the kept rows
-- of the span and of the changed requests.
CREATE OR REPLACE TEMP TABLE refresh_priors_span AS
WITH changed AS (
    SELECT first_token_ts AS t, race_ts FROM refresh_hedge_attempts_before
    UNION ALL
    SELECT first_token_ts, race_ts FROM {store}.derived_hedge_attempts
    WHERE request IN (SELECT request FROM refresh_requests)
)
SELECT least(min(t), min(race_ts)) AS lo, greatest(max(t) + INTERVAL 1 HOUR, max(race_ts)) AS hi FROM changed;

CREATE OR REPLACE TEMP TABLE refresh_priors_attempts AS    -- the view reads them three times
SELECT h.* FROM {store}.derived_hedge_attempts h, refresh_priors_span s
WHERE h.first_token_ts BETWEEN s.lo - INTERVAL 1 HOUR AND s.hi
   OR h.request IN (SELECT x.request FROM {store}.derived_hedge_attempts x, refresh_priors_span s
                    WHERE x.race_ts BETWEEN s.lo AND s.hi);

CREATE OR REPLACE TEMP VIEW hedge_attempts AS SELECT * FROM refresh_priors_attempts;

DELETE FROM {store}.derived_hedge_priors
WHERE request IN (SELECT request FROM refresh_requests)
   OR race_ts BETWEEN (SELECT lo FROM refresh_priors_span) AND (SELECT hi FROM refresh_priors_span);

INSERT INTO {store}.derived_hedge_priors BY NAME
SELECT p.* FROM {store}.hedge_priors p, refresh_priors_span s WHERE p.race_ts BETWEEN s.lo AND s.hi;
