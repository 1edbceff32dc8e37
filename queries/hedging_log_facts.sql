-- hedging_log_facts: what the hedging analysis can rely on in the stored gateway logs:
-- the time span of the race_completed lines, how many races have no time (bare lines) or
-- no decision_made line (primary inferred from the lowest nonce), and the lines' time
-- resolution: 'second' when every race_completed time comes from a Go log prefix without
-- a fraction (then wasted seconds and first-token times are whole-second readings), and how
-- many cache lines were read (none: the cache is off, or this gateway does not log it).
-- Reads: log_events, hedge_races.
SELECT
    count(*) AS race_completed_lines,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    count(*) FILTER (WHERE ts IS NULL) AS lines_without_time,
    count(*) FILTER (WHERE ts_source = 'go' AND microsecond(ts) % 1000000 = 0) AS whole_second_lines,
    CASE WHEN count(ts) = 0 THEN NULL
         WHEN count(*) FILTER (WHERE ts_source = 'go' AND microsecond(ts) % 1000000 = 0) = count(ts) THEN 'second'
         ELSE 'sub-second' END AS time_resolution,
    (SELECT count(*) FROM hedge_races WHERE race_ts IS NULL) AS races_without_time,
    (SELECT count(*) FROM hedge_races WHERE primary_inferred) AS races_primary_inferred,
    (SELECT count(*) FROM hedge_races) AS races_stored,
    -- whether the cache logs at all: without one such line, 0 cache hits is none logged
    (SELECT count(*) FROM log_events WHERE kind = 'stage' AND name IN
        ('gateway_cache_hit', 'gateway_cache_miss', 'gateway_cache_stored', 'gateway_devshard_cache_hit',
         'gateway_devshard_cache_miss', 'gateway_devshard_cache_stored', 'gateway_devshard_cache_skipped'))
        AS cache_lines
FROM log_events
WHERE kind = 'stage' AND name = 'race_completed';
