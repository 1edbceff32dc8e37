-- targets_demand_attempts: the real attempts (race_completed, probes excluded) of every
-- gateway log in the store running between $since and $until, per model, with their
-- start (end minus attempt_ms) and end: the in-flight demand the preserved hosts must
-- carry. All log files count (several gateways' logs add up).
-- Reads: attempts.
SELECT model, ts - to_milliseconds(coalesce(attempt_ms, 0)) AS start_ts, ts AS end_ts, file_id
FROM attempts
WHERE NOT probe AND ts IS NOT NULL AND model IS NOT NULL
  AND ts >= $since AND ts - to_milliseconds(coalesce(attempt_ms, 0)) <= $until
ORDER BY start_ts;
