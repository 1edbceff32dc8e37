-- hedging_metrics_suppressed: what the gateway's own metric counts as suppressed losers over
-- [$since, $until): the increase of devshard_gateway_attempts_terminal_total
-- {visibility="suppressed_loser"} (gateway-logs.md 4.4, 8), per /metrics URL, participant and role.
--   a scrape's time  the samples' own timestamp when the exposition sends one, else when it
--                    was scraped (metric_scrapes.fetched_at)
--   base, end        per URL, the latest scrape at or before $since and the earliest at or after
--                    $until; bracketed = both exist (else the increase over the range is unknown
--                    and increase is NULL)
--   increase         Prometheus' increase() over the scrapes from base to end: each series'
--                    rises summed, a fall being a counter reset (the gateway restarted: the new
--                    value counts whole); a series first seen after base started from 0
-- One row per URL with no suppressed-loser sample in range at all (participant NULL), so that a
-- URL that was scraped is never silently left out.
-- Reads: metric_samples.
WITH scr AS (
    SELECT source_url AS url, scrape_id, coalesce(max(sample_timestamp), max(scraped_at)) AS t
    FROM metric_samples
    GROUP BY source_url, scrape_id
), bounds AS (
    SELECT url,
           max(t) FILTER (WHERE $since IS NOT NULL AND t <= CAST($since AS TIMESTAMPTZ)) AS base_t,
           min(t) FILTER (WHERE $until IS NOT NULL AND t >= CAST($until AS TIMESTAMPTZ)) AS end_t
    FROM scr GROUP BY url
), s AS (
    SELECT m.source_url AS url, m.labels['participant_key'] AS participant, m.labels['role'] AS role,
           m.labels['model'] AS model, m.labels['outcome'] AS outcome, c.t, m.value,
           c.t = b.base_t AS at_base
    FROM metric_samples m
    JOIN scr c ON c.url = m.source_url AND c.scrape_id = m.scrape_id
    JOIN bounds b ON b.url = m.source_url
    WHERE m.sample_name = 'devshard_gateway_attempts_terminal_total'
      AND m.labels['visibility'] = 'suppressed_loser'
      AND b.base_t IS NOT NULL AND b.end_t IS NOT NULL AND c.t BETWEEN b.base_t AND b.end_t
), d AS (
    SELECT *, lag(value) OVER (PARTITION BY url, participant, role, model, outcome ORDER BY t) AS prev
    FROM s
), per AS (
    SELECT url, participant, role,
           sum(CASE WHEN prev IS NULL THEN (CASE WHEN at_base THEN 0 ELSE value END)
                    WHEN value >= prev THEN value - prev
                    ELSE value END) AS increase
    FROM d GROUP BY url, participant, role
)
SELECT b.url, p.participant, p.role,
       b.base_t IS NOT NULL AND b.end_t IS NOT NULL AS bracketed,
       b.base_t, b.end_t,
       CASE WHEN b.base_t IS NOT NULL AND b.end_t IS NOT NULL THEN coalesce(p.increase, 0) END AS increase
FROM bounds b
LEFT JOIN per p ON p.url = b.url
ORDER BY b.url, p.participant, p.role;
