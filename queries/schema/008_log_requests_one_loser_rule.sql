-- 008: one rule for a suppressed loser. 003 counted log_requests.suppressed_losers by
-- comparing texts (winner = 'false', finished = 'true', probe absent or 'false') while
-- log_attempts.suppressed_loser casts them (TRY_CAST ... AS BOOLEAN); the two disagreed on
-- odd values such as probe="" (an attempt the first called a probe and the second did not).
-- log_requests now counts log_attempts' rows: the attempt view is the one definition.

ALTER VIEW log_requests RENAME TO log_requests_003;

CREATE VIEW log_requests AS
SELECT r.* REPLACE (coalesce(a.suppressed_losers, 0) AS suppressed_losers)
FROM log_requests_003 r
LEFT JOIN (SELECT request, count(*) FILTER (WHERE suppressed_loser) AS suppressed_losers
           FROM log_attempts GROUP BY request) a USING (request);
