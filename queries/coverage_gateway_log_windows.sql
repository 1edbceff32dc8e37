-- How the gateway logs cover each window of epoch $epoch whose times are known: the
-- lines inside [start, end], the first and last of them, and whether the logs read cover
-- the whole window densely: one stretch of lines, no two consecutive ones more than 10
-- minutes apart, from at or before its start to at or after its end. (The first and last
-- line of all the logs would let two files days apart, or two stray lines, cover every
-- window between them; lines with impossible times are rejected at ingestion,
-- implausible_time.)
-- Reads: chain_windows, log_events.
WITH w AS (
    SELECT * FROM chain_windows
    WHERE epoch = $epoch AND start_time IS NOT NULL AND end_time IS NOT NULL
),
near AS (       -- per minute with lines, near the windows: its first and last line
    SELECT epoch_us(ts) // 60000000 AS minute, min(ts) AS lo, max(ts) AS hi FROM log_events
    WHERE ts >= (SELECT min(start_time) FROM w) - INTERVAL 10 MINUTE
      AND ts <= (SELECT max(end_time) FROM w) + INTERVAL 10 MINUTE
    GROUP BY minute
),
breaks AS (     -- a stretch starts where the line before is more than 10 minutes older
    SELECT lo, hi, coalesce(lo - lag(hi) OVER (ORDER BY minute) > INTERVAL 10 MINUTE, true) AS starts FROM near
),
stretches AS (
    SELECT min(lo) AS first_ts, max(hi) AS last_ts
    FROM (SELECT lo, hi, sum(starts::INTEGER) OVER (ORDER BY lo) AS stretch FROM breaks)
    GROUP BY stretch
)
SELECT w.window, w.start_time AS start, w.end_time AS "end",
       count(e.ts) AS lines, min(e.ts) AS first_line, max(e.ts) AS last_line,
       EXISTS (SELECT 1 FROM stretches s WHERE s.first_ts <= w.start_time AND s.last_ts >= w.end_time)
           AS fully_covered
FROM w
LEFT JOIN log_events e ON e.ts >= w.start_time AND e.ts <= w.end_time
GROUP BY w.window, w.start_height, w.start_time, w.end_time
ORDER BY w.start_height;
