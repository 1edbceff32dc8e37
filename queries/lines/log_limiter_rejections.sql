-- Requests the gateway turned away: limiter rejections (stage gateway_limiter_rejected),
-- all-escrows-at-zero-capacity answers (429 before gateway v4.1.2; 503 after, counting only
-- the escrows that can fund the request: log_escrow_routing has those), and per-participant
-- limiter rejections.
SELECT
    file_id, line_no, ts, request,
    CASE WHEN name = 'gateway_limiter_rejected' THEN 'limiter'
         WHEN name = 'gateway_zero_capacity' THEN 'zero_capacity'
         ELSE 'participant_limit' END AS source,
    CASE WHEN name = 'gateway_zero_capacity' THEN 'zero_capacity' ELSE fields->>'reason' END AS reason,
    fields->>'model' AS model,
    TRY_CAST(fields->>'input_tokens' AS BIGINT) AS input_tokens,
    TRY_CAST(fields->>'in_flight' AS BIGINT) AS in_flight,
    TRY_CAST(fields->>'limit' AS BIGINT) AS "limit",
    TRY_CAST(fields->>'candidates' AS INTEGER) AS candidate_escrows,
    fields->>'weights' AS escrow_weights,
    fields->>'participant_key' AS participant
-- One name per branch: DuckDB filters the scan by an equality and decompresses no other line's
-- fields; with an IN list it only skips row groups, and reads every line's fields (~0.4 CPU-s
-- per GB of log).
FROM (SELECT * FROM log_events WHERE name = 'gateway_limiter_rejected'
      UNION ALL SELECT * FROM log_events WHERE name = 'gateway_zero_capacity'
      UNION ALL SELECT * FROM log_events WHERE name = 'participant_limit_rejected')
