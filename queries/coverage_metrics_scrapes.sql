-- Metrics scraped into the store, over all time: the /metrics URLs, how many scrapes,
-- and the first and last scrape time.
-- Reads: metric_scrapes.
SELECT list(DISTINCT url ORDER BY url) AS urls,
       count(*)                        AS scrapes,
       min(fetched_at)                 AS first_scrape,
       max(fetched_at)                 AS last_scrape
FROM metric_scrapes;
