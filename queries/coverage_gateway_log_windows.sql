-- How the gateway logs cover each window of epoch $epoch whose times are known: the
-- lines inside [start, end], the first and last of them, and whether the logs read cover
-- the whole window densely: one stretch of lines, no two consecutive ones more than 10
-- minutes apart, from at or before its start to at or after its end. (The first and last
-- line of all the logs would let two files days apart, or two stray lines, cover every
-- window between them; lines with impossible times are rejected at ingestion,
-- implausible_time.) covered_from, covered_to: the part of the window the stretches cover at its
-- ends; stretches: how many stretches of lines meet it (more than one: gaps inside).
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
           AS fully_covered,
       -- where the stretches cover the window from: its start when one reaches over it (a quiet
       -- minute after the start is no gap), else its first line; likewise to its end
       CASE WHEN EXISTS (SELECT 1 FROM stretches s WHERE s.first_ts <= w.start_time AND s.last_ts >= w.start_time)
            THEN w.start_time ELSE min(e.ts) END AS covered_from,
       CASE WHEN EXISTS (SELECT 1 FROM stretches s WHERE s.first_ts <= w.end_time AND s.last_ts >= w.end_time)
            THEN w.end_time ELSE max(e.ts) END AS covered_to,
       (SELECT count(*) FROM stretches s WHERE s.first_ts <= w.end_time AND s.last_ts >= w.start_time)
           AS stretches
FROM w
LEFT JOIN log_events e ON e.ts >= w.start_time AND e.ts <= w.end_time
GROUP BY w.window, w.start_height, w.start_time, w.end_time
ORDER BY w.start_height;
