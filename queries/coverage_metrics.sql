-- Metrics coverage for a time window [$start, $end): the /metrics URLs scraped, how
-- many scrapes and samples fall inside it, and the first and last scrape time.
-- Metric counters are cumulative, so a window needs a scrape at or before its
-- start and one at or after its end to be measured; both are reported.
-- Reads: metric_scrapes.
SELECT list(DISTINCT url ORDER BY url)                                  AS urls,
       count(*) FILTER (WHERE fetched_at >= $start AND fetched_at < $end) AS scrapes_inside,
       coalesce(sum(samples) FILTER (WHERE fetched_at >= $start AND fetched_at < $end), 0) AS samples_inside,
       max(fetched_at) FILTER (WHERE fetched_at <= $start)               AS last_scrape_before_start,
       min(fetched_at) FILTER (WHERE fetched_at >= $end)                 AS first_scrape_after_end,
       min(fetched_at)                                                   AS first_scrape,
       max(fetched_at)                                                   AS last_scrape
FROM metric_scrapes;
