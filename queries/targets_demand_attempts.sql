-- targets_demand_attempts: the real attempts (race_completed, probes excluded) of every
-- gateway log in the store running between $since and $until, per model, with their
-- start (end minus attempt_ms) and end: the in-flight demand the preserved hosts must
-- carry. All log files count (several gateways' logs add up).
-- Running between: overlaps_cpoc_window (views/in_cpoc_window.sql), both ends in.
-- Reads: attempts.
SELECT model, ts - to_milliseconds(coalesce(attempt_ms, 0)) AS start_ts, ts AS end_ts, file_id
FROM attempts
WHERE NOT probe AND ts IS NOT NULL AND model IS NOT NULL
  AND overlaps_cpoc_window(ts - to_milliseconds(coalesce(attempt_ms, 0)), ts, $since, $until)
ORDER BY start_ts;
