-- Metrics coverage of a time window [$start, $end): how many scrapes and samples fall
-- inside it, and the nearest scrapes around it. Metric counters are cumulative, so a
-- window is measurable only with a scrape at or before its start and one at or after
-- its end.
-- Reads: metric_scrapes.
SELECT count(*) FILTER (WHERE fetched_at >= $start AND fetched_at < $end) AS scrapes_inside,
       coalesce(sum(samples) FILTER (WHERE fetched_at >= $start AND fetched_at < $end), 0) AS samples_inside,
       max(fetched_at) FILTER (WHERE fetched_at <= $start)               AS last_scrape_before_start,
       min(fetched_at) FILTER (WHERE fetched_at >= $end)                 AS first_scrape_after_end
FROM metric_scrapes;
