-- One row per request id: admission, routing, the hedging decision and the outcome.
-- outcome: succeeded | failed | rejected (limiter) | NULL (no terminal line in the logs read).
-- The primary (primary_nonce, primary_host, primary_inferred) and the suppressed losers come
-- from views/attempts.sql, where they are defined: NULL primary for a request none of whose
-- attempts completed in the logs read.
-- Reads: log_events (names, times, escrows: no fields), log_request_lines, request_decisions, attempts.
CREATE OR REPLACE VIEW log_requests AS
WITH r AS (
SELECT
    request,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    count(*) AS lines,
    arg_min(escrow, file_id::BIGINT * 1000000000000 + line_no) FILTER (WHERE escrow IS NOT NULL) AS escrow,
    count(*) FILTER (WHERE name = 'race_completed') AS attempts,
    CASE WHEN bool_or(name = 'request_succeeded') THEN 'succeeded'
         WHEN bool_or(name IN ('request_failed', 'proxy_stream_failed')) THEN 'failed'
         WHEN bool_or(name = 'gateway_limiter_rejected') THEN 'rejected' END AS outcome,
    bool_or(name = 'gateway_limiter_rejected') AS limiter_rejected
FROM log_events
WHERE request IS NOT NULL
GROUP BY request
), f AS (
SELECT
    request,
    first(model ORDER BY pos)
        FILTER (WHERE name IN ('gateway_request_received', 'proxy_request_started', 'runner_started')) AS model,
    first(input_tokens ORDER BY pos) FILTER (WHERE name = 'gateway_request_received') AS input_tokens_est,    -- ~ body bytes / 4
    first(input_tokens ORDER BY pos)
        FILTER (WHERE name IN ('proxy_request_started', 'runner_started')) AS input_bytes,  -- body bytes (enters the escrow cost)
    first(stream ORDER BY pos) FILTER (WHERE name = 'proxy_request_started') AS stream,
    first(winner_nonce ORDER BY pos) FILTER (WHERE name IN ('request_succeeded', 'request_fully_settled')) AS winner_nonce,
    first(outcome ORDER BY pos) FILTER (WHERE name = 'request_fully_settled') AS settle_outcome,
    first(error ORDER BY pos)
        FILTER (WHERE name IN ('request_failed', 'proxy_stream_failed', 'runner_prepare_failed')) AS error,
    bool_or(name = 'runner_prepare_failed' AND error LIKE '%insufficient escrow balance%') AS insufficient_balance
FROM log_request_lines
GROUP BY request
), d AS (
-- the request's decision: its first decision_made line (views/request_decisions.sql)
SELECT request, decision, max_attempts FROM request_decisions
), a AS (
SELECT request, any_value(primary_nonce) AS primary_nonce, any_value(primary_inferred) AS primary_inferred,
       race_primary(host, role, end_pos) AS primary_host,      -- views/race_primary.sql
       count(*) FILTER (WHERE suppressed_loser) AS suppressed_losers
FROM attempts WHERE request IS NOT NULL GROUP BY request
)
SELECT r.request, r.first_ts, r.last_ts, r.lines, r.escrow, f.model, f.input_tokens_est, f.input_bytes, f.stream,
       d.decision, a.primary_nonce, a.primary_host, a.primary_inferred, d.max_attempts, r.attempts,
       coalesce(a.suppressed_losers, 0) AS suppressed_losers, f.winner_nonce, r.outcome, f.settle_outcome,
       f.error, coalesce(f.insufficient_balance, false) AS insufficient_balance, r.limiter_rejected
FROM r
LEFT JOIN f USING (request)
LEFT JOIN d USING (request)
LEFT JOIN a USING (request);
