-- hedging_totals: the totals over races in [$since, $until) (hour IS NULL) and per hour of
-- race time (definitions: views/hedge_attempts.sql):
--   races, attempts (non-probe), attempts_per_request = attempts / races (a race is a user
--   request dispatched to hosts; cache hits are counted apart: cache_hits, user_requests),
--   hedged races, rescues, suppressed losers;
--   attempt_seconds = Σ attempt durations (the GPU-time proxy: race_completed attempt_ms, or the
--   attempt's own stage lines where attempt_ms disagrees with them by more than 1 s, #1935:
--   hedge_attempts.duration_ms) and wasted_seconds
--   (losers' time after the winner was selected, outside rescues) with its share; the same
--   for output bytes and, where race_completed carries usage_tokens, tokens.
-- Reads: hedge_races, log_events (gateway_cache_hit).
WITH r AS (
    SELECT * FROM hedge_races
    WHERE in_range(race_ts, $since, $until)
), c AS (
    SELECT date_trunc('hour', min(ts)) AS hour, request FROM log_events
    WHERE kind = 'stage' AND name = 'gateway_cache_hit' AND request IS NOT NULL
      AND in_range(ts, $since, $until)
    GROUP BY request
), hits AS (
    SELECT hour, count(*) AS cache_hits FROM c GROUP BY GROUPING SETS ((), (hour))
), t AS (
    SELECT date_trunc('hour', race_ts) AS hour, grouping(date_trunc('hour', race_ts)) AS g,
           count(*) AS races,
           sum(attempts) AS attempts,
           count(*) FILTER (WHERE hedged) AS hedged_races,
           count(*) FILTER (WHERE primary_lost) AS primary_lost,
           count(*) FILTER (WHERE rescue) AS rescues,
           sum(suppressed_losers) AS suppressed_losers,
           sum(wasted_attempts) AS wasted_attempts,
           round(sum(duration_ms) / 1000.0, 3) AS attempt_seconds,
           round(coalesce(sum(wasted_ms), 0) / 1000.0, 3) AS wasted_seconds,
           sum(output_bytes) AS output_bytes,
           coalesce(sum(wasted_bytes), 0) AS wasted_bytes,
           sum(usage_tokens) AS usage_tokens,
           sum(wasted_tokens) AS wasted_tokens
    FROM r
    GROUP BY GROUPING SETS ((), (date_trunc('hour', race_ts)))
)
SELECT CASE WHEN t.g = 0 THEN t.hour END AS hour,
       t.* EXCLUDE (hour, g),
       coalesce(h.cache_hits, 0) AS cache_hits,
       t.races + coalesce(h.cache_hits, 0) AS user_requests,
       CASE WHEN t.races > 0 THEN round(t.attempts / t.races, 4) END AS attempts_per_request,
       CASE WHEN t.attempt_seconds > 0 THEN round(t.wasted_seconds / t.attempt_seconds, 4) END AS wasted_seconds_share,
       CASE WHEN t.output_bytes > 0 THEN round(t.wasted_bytes / t.output_bytes, 4) END AS wasted_bytes_share,
       CASE WHEN t.usage_tokens > 0 THEN round(t.wasted_tokens / t.usage_tokens, 4) END AS wasted_tokens_share
FROM t
LEFT JOIN hits h ON (t.g = 1 AND h.hour IS NULL) OR h.hour = t.hour
WHERE t.g = 1 OR t.hour IS NOT NULL OR t.races > 0
ORDER BY t.g DESC, t.hour;
