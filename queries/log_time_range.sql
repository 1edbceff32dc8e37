-- log_time_range: the time range the stored gateway logs cover (their timestamped lines; NULL
-- when none carried a time): what `collect --gateway-log` says after reading, and what the
-- hedging usage error names (give --since/--until within it).
--
-- Reads: log_events.
SELECT min(ts) AS first_ts, max(ts) AS last_ts
FROM log_events
