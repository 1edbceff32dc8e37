-- One row per attempt: the race_completed line, with its role (primary = the nonce of the
-- request's decision_made, else secondary; NULL when no decision_made was read), the
-- attempt's terminal stage, whether its stream was suppressed, and its nonce_disposition
-- when logged. suppressed_loser follows the hedging view's rule of a suppressed loser (a non-probe
-- non-winner of a race that has a winner, not cancelled, that finished or whose stream was
-- suppressed); a test holds the two views to the same rows.
CREATE OR REPLACE VIEW log_attempts AS
WITH rc AS (
    SELECT * FROM log_events WHERE kind = 'stage' AND name = 'race_completed'
), dm AS (
    SELECT request, escrow, first(nonce ORDER BY file_id, line_no) AS primary_nonce,
           first(fields->>'decision' ORDER BY file_id, line_no) AS decision
    FROM log_events WHERE kind = 'stage' AND name = 'decision_made' AND request IS NOT NULL
    GROUP BY request, escrow
), term AS (
    SELECT escrow, nonce,
           last(name ORDER BY file_id, line_no) FILTER (WHERE name NOT IN ('stream_suppressed', 'first_token',
                                                        'receipt_received')) AS terminal_stage,
           bool_or(name = 'stream_suppressed') AS stream_suppressed,
           bool_or(name = 'speculative_attempt_canceled') AS canceled_line,
           first(fields->>'route' ORDER BY file_id, line_no) FILTER (WHERE name = 'first_token') AS first_token_route,
           first(TRY_CAST(fields->>'elapsed_ms' AS BIGINT) ORDER BY file_id, line_no)
               FILTER (WHERE name = 'receipt_received') AS receipt_ms
    FROM log_events
    WHERE kind = 'stage' AND nonce IS NOT NULL AND escrow IS NOT NULL
      AND name IN ('send_completed', 'send_failed', 'empty_stream', 'error_stream', 'phase_transition_aborted',
                   'process_response_failed', 'winner_stream_hard_timeout', 'speculative_attempt_canceled',
                   'winner_write_ctx_cancelled', 'stream_suppressed', 'first_token', 'receipt_received')
    GROUP BY escrow, nonce
), disp AS (
    SELECT escrow, nonce, last(fields->>'disposition' ORDER BY file_id, line_no) AS disposition,
           last(fields->>'dispatch_phase' ORDER BY file_id, line_no) AS dispatch_phase
    FROM log_events WHERE kind = 'stage' AND name = 'nonce_disposition' AND escrow IS NOT NULL
    GROUP BY escrow, nonce
)
SELECT
    rc.file_id, rc.line_no, rc.ts, rc.request, rc.escrow, rc.nonce, rc.host,
    TRY_CAST(rc.fields->>'host_idx' AS INTEGER) AS host_idx,
    rc.fields->>'participant' AS participant,
    rc.fields->>'model' AS model,
    TRY_CAST(rc.fields->>'input_tokens' AS BIGINT) AS input_bytes,
    TRY_CAST(rc.fields->>'winner' AS BOOLEAN) AS winner,
    TRY_CAST(rc.fields->>'finished' AS BOOLEAN) AS finished,
    TRY_CAST(rc.fields->>'responsive' AS BOOLEAN) AS responsive,
    TRY_CAST(rc.fields->>'has_receipt' AS BOOLEAN) AS has_receipt,
    TRY_CAST(rc.fields->>'confirmed_at' AS BIGINT) AS confirmed_at,
    TRY_CAST(rc.fields->>'attempt_ms' AS BIGINT) AS attempt_ms,
    TRY_CAST(rc.fields->>'output_chunks' AS BIGINT) AS output_chunks,
    TRY_CAST(rc.fields->>'content_chunks' AS BIGINT) AS content_chunks,
    TRY_CAST(rc.fields->>'output_bytes' AS BIGINT) AS output_bytes,
    TRY_CAST(rc.fields->>'stream_bytes_read' AS BIGINT) AS stream_bytes_read,
    TRY_CAST(rc.fields->>'usage_tokens' AS BIGINT) AS usage_tokens,
    TRY_CAST(rc.fields->>'max_gap_ms' AS BIGINT) AS max_gap_ms,
    TRY_CAST(rc.fields->>'mean_gap_ms' AS BIGINT) AS mean_gap_ms,
    nullif(rc.fields->>'content_source', '') AS content_source,
    nullif(rc.fields->>'error_source', '') AS error_source,
    coalesce(TRY_CAST(rc.fields->>'probe' AS BOOLEAN), false) AS probe,
    coalesce(TRY_CAST(rc.fields->>'suspicious' AS BOOLEAN), false) AS suspicious,
    rc.fields->>'failure_reason' AS failure_reason,
    TRY_CAST(rc.fields->>'stall_count' AS INTEGER) AS stall_count,
    rc.fields->>'stalls' AS stalls,                            -- a JSON array, as logged
    CASE WHEN dm.primary_nonce IS NULL THEN NULL
         WHEN dm.primary_nonce = rc.nonce THEN 'primary' ELSE 'secondary' END AS role,
    dm.primary_nonce,
    dm.decision,
    (NOT coalesce(TRY_CAST(rc.fields->>'winner' AS BOOLEAN), false)
        AND NOT coalesce(TRY_CAST(rc.fields->>'probe' AS BOOLEAN), false)
        AND coalesce(bool_or(TRY_CAST(rc.fields->>'winner' AS BOOLEAN)
                             AND NOT coalesce(TRY_CAST(rc.fields->>'probe' AS BOOLEAN), false))
                         OVER (PARTITION BY rc.request), false)
        AND NOT (coalesce(term.canceled_line, false) OR coalesce(rc.fields->>'failure_reason' = 'client_cancelled', false))
        AND (coalesce(TRY_CAST(rc.fields->>'finished' AS BOOLEAN), false) OR coalesce(term.stream_suppressed, false))
    ) AS suppressed_loser,
    term.terminal_stage,
    coalesce(term.stream_suppressed, false) AS stream_suppressed,
    term.first_token_route,
    term.receipt_ms,
    disp.disposition,
    disp.dispatch_phase
FROM rc
LEFT JOIN dm ON dm.request = rc.request AND dm.escrow IS NOT DISTINCT FROM rc.escrow
LEFT JOIN term ON term.escrow = rc.escrow AND term.nonce = rc.nonce
LEFT JOIN disp ON disp.escrow = rc.escrow AND disp.nonce = rc.nonce;
