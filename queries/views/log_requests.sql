-- One row per request id: admission, routing, the hedging decision and the outcome.
-- outcome: succeeded | failed | rejected (limiter) | NULL (no terminal line in the logs read).
-- The primary (primary_nonce, primary_host, primary_inferred) and the suppressed losers come
-- from views/attempts.sql, where they are defined: NULL primary for a request none of whose
-- attempts completed in the logs read.
-- Reads: log_events, attempts.
CREATE OR REPLACE VIEW log_requests AS
WITH r AS (
SELECT
    request,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    count(*) AS lines,
    first(escrow ORDER BY file_id, line_no) FILTER (WHERE escrow IS NOT NULL) AS escrow,
    first(fields->>'model' ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('gateway_request_received', 'proxy_request_started', 'runner_started')) AS model,
    first(TRY_CAST(fields->>'input_tokens' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'gateway_request_received') AS input_tokens_est,    -- ~ body bytes / 4
    first(TRY_CAST(fields->>'input_tokens' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('proxy_request_started', 'runner_started')) AS input_bytes,  -- body bytes (enters the escrow cost)
    first(TRY_CAST(fields->>'stream' AS BOOLEAN) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'proxy_request_started') AS stream,
    first(fields->>'decision' ORDER BY file_id, line_no) FILTER (WHERE name = 'decision_made') AS decision,
    NULL::BIGINT AS primary_nonce,         -- the primary and the suppressed losers: from attempts below
    NULL::VARCHAR AS primary_host,
    NULL::BOOLEAN AS primary_inferred,
    first(TRY_CAST(fields->>'max_attempts' AS INTEGER) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'decision_made') AS max_attempts,
    count(*) FILTER (WHERE name = 'race_completed') AS attempts,
    NULL::BIGINT AS suppressed_losers,
    first(TRY_CAST(fields->>'winner_nonce' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('request_succeeded', 'request_fully_settled')) AS winner_nonce,
    CASE WHEN bool_or(name = 'request_succeeded') THEN 'succeeded'
         WHEN bool_or(name IN ('request_failed', 'proxy_stream_failed')) THEN 'failed'
         WHEN bool_or(name = 'gateway_limiter_rejected') THEN 'rejected' END AS outcome,
    first(fields->>'outcome' ORDER BY file_id, line_no) FILTER (WHERE name = 'request_fully_settled') AS settle_outcome,
    first(fields->>'error' ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('request_failed', 'proxy_stream_failed', 'runner_prepare_failed')) AS error,
    bool_or(name = 'runner_prepare_failed' AND fields->>'error' LIKE '%insufficient escrow balance%') AS insufficient_balance,
    bool_or(name = 'gateway_limiter_rejected') AS limiter_rejected
FROM log_events
WHERE request IS NOT NULL
GROUP BY request
)
SELECT r.* REPLACE (a.primary_nonce AS primary_nonce, a.primary_host AS primary_host,
                    a.primary_inferred AS primary_inferred,
                    coalesce(a.suppressed_losers, 0) AS suppressed_losers)
FROM r
LEFT JOIN (SELECT request, any_value(primary_nonce) AS primary_nonce, any_value(primary_inferred) AS primary_inferred,
                  first(host) FILTER (WHERE role = 'primary') AS primary_host,
                  count(*) FILTER (WHERE suppressed_loser) AS suppressed_losers
           FROM attempts WHERE request IS NOT NULL GROUP BY request) a USING (request);
