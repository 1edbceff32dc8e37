-- Gateway log lines inside a time window [$start, $end], and the first and last of them.
-- Reads: log_events.
SELECT count(*) AS lines, min(ts) AS first_ts, max(ts) AS last_ts
FROM log_events
WHERE ts >= $start AND ts <= $end;
