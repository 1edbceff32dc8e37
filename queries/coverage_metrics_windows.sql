-- Metrics coverage of each window of epoch $epoch whose times are known: the scrapes
-- inside [start, end), and the nearest scrapes around it. Metric counters are cumulative,
-- so a window is measurable only with a scrape at or before its start and one at or after
-- its end.
-- Reads: chain_windows, metric_scrapes.
SELECT w.window, w.start_time AS start, w.end_time AS "end",
       count(m.fetched_at) FILTER (WHERE m.fetched_at >= w.start_time AND m.fetched_at < w.end_time) AS scrapes_inside,
       max(m.fetched_at) FILTER (WHERE m.fetched_at <= w.start_time) AS scrape_before_start,
       min(m.fetched_at) FILTER (WHERE m.fetched_at >= w.end_time)   AS scrape_after_end,
       coalesce(max(m.fetched_at) FILTER (WHERE m.fetched_at <= w.start_time) IS NOT NULL
                AND min(m.fetched_at) FILTER (WHERE m.fetched_at >= w.end_time) IS NOT NULL, false) AS measurable
FROM chain_windows w
LEFT JOIN metric_scrapes m ON true
WHERE w.epoch = $epoch AND w.start_time IS NOT NULL AND w.end_time IS NOT NULL
GROUP BY w.window, w.start_height, w.start_time, w.end_time
ORDER BY w.start_height;
