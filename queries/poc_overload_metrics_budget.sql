-- poc_overload_metrics_budget: the gateway's concurrency budget as its /metrics scrapes
-- showed it: per scrape, the effective max concurrent requests and the capacity weights
-- (gateway-logs.md 7.2: effective = floor(min(current, baseline) weight x per_10000 / 10000)).
-- A scrape taken during PoC generation bounds poc_max_concurrent_requests_per_10000_weight.
-- Reads: metric_samples.
SELECT scrape_id, any_value(scraped_at) AS scraped_at, any_value(source_url) AS source_url,
       max(value) FILTER (WHERE sample_name = 'devshard_gateway_effective_max_concurrent_requests'
                          AND cardinality(labels) = 0) AS effective_max,
       max(value) FILTER (WHERE sample_name = 'devshard_gateway_capacity_total_weight'
                          AND cardinality(labels) = 0) AS total_weight,
       max(value) FILTER (WHERE sample_name = 'devshard_gateway_capacity_baseline_weight'
                          AND cardinality(labels) = 0) AS baseline_weight
FROM metric_samples
WHERE sample_name IN ('devshard_gateway_effective_max_concurrent_requests',
                      'devshard_gateway_capacity_total_weight', 'devshard_gateway_capacity_baseline_weight')
GROUP BY scrape_id
ORDER BY scrape_id;
