-- How the gateway logs cover each window of epoch $epoch whose times are known: the
-- lines inside [start, end], the first and last of them, and whether the logs read span
-- the whole window (their first line at or before its start, their last at or after its end).
-- Reads: chain_windows, log_events.
WITH span AS (SELECT min(ts) AS first_ts, max(ts) AS last_ts FROM log_events)
SELECT w.window, w.start_time AS start, w.end_time AS "end",
       count(e.ts) AS lines, min(e.ts) AS first_line, max(e.ts) AS last_line,
       coalesce(any_value(span.first_ts) <= w.start_time AND any_value(span.last_ts) >= w.end_time, false)
           AS fully_covered
FROM chain_windows w
CROSS JOIN span
LEFT JOIN log_events e ON e.ts >= w.start_time AND e.ts <= w.end_time
WHERE w.epoch = $epoch AND w.start_time IS NOT NULL AND w.end_time IS NOT NULL
GROUP BY w.window, w.start_height, w.start_time, w.end_time
ORDER BY w.start_height;
