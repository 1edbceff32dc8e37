-- hedging_wasted_by_hour: per hour and decision reason, over races in [$since, $until): the
-- attempt-seconds and attempts thrown away (wasted: losers outside rescue races, see
-- views/hedge_attempts.sql), by the decision of the race they lost. For the html report's
-- chart of wasted attempt-seconds per hour by decision reason.
-- Reads: hedge_attempts.
SELECT date_trunc('hour', race_ts) AS hour,
       coalesce(decision, '(no decision_made read)') AS decision,
       count(*) AS wasted_attempts,
       round(coalesce(sum(wasted_ms), 0) / 1000.0, 3) AS wasted_seconds
FROM hedge_attempts
WHERE NOT probe AND wasted AND race_ts IS NOT NULL
  AND in_range(race_ts, $since, $until)
GROUP BY 1, 2
ORDER BY 1, 2;
