-- 005 metrics: scrapes of the gateway's Prometheus /metrics (gateway-logs.md section 8).
-- Each `auditor collect --metrics URL` appends one scrape (a new scrape_id); earlier
-- scrapes are never replaced, so counters can be differenced over time (they reset
-- when the gateway restarts). A scrape is written whole or not at all.

CREATE TABLE metric_scrapes (
    scrape_id   BIGINT PRIMARY KEY,    -- 1, 2, 3, ... in the order scraped into this store
    url         VARCHAR NOT NULL,      -- the /metrics URL that answered
    fetched_at  TIMESTAMPTZ NOT NULL,
    samples     BIGINT NOT NULL,
    families    BIGINT NOT NULL,
    bytes       BIGINT                 -- size of the exposition body (UTF-8)
);

-- One row per sample line. `family` is the metric family as the Prometheus parser
-- names it: a counter's family drops the `_total` suffix
-- (family devshard_gateway_attempts_terminal, sample_name
-- devshard_gateway_attempts_terminal_total); a histogram's samples are
-- <family>_bucket (label le, '+Inf' last), <family>_sum and <family>_count.
-- type: counter | gauge | histogram | summary | untyped/unknown | ...
CREATE TABLE metric_samples (
    scrape_id        BIGINT NOT NULL,
    scraped_at       TIMESTAMPTZ NOT NULL,
    source_url       VARCHAR NOT NULL,
    family           VARCHAR NOT NULL,
    type             VARCHAR NOT NULL,
    sample_name      VARCHAR NOT NULL,
    labels           MAP(VARCHAR, VARCHAR) NOT NULL,   -- labels['visibility'], {} when none
    value            DOUBLE NOT NULL,                  -- NaN and +/-Inf kept as such
    sample_timestamp TIMESTAMPTZ                       -- the line's own timestamp, rarely sent
);
