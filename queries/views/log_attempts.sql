-- log_attempts: one row per attempt (a race_completed line) with its fields, its role
-- (primary | secondary | probe), the request's primary and decision, whether it is a
-- suppressed loser, its terminal stage, whether its stream was suppressed, and its
-- nonce_disposition when logged. The attempt, the primary and the suppressed loser are
-- those of views/attempts.sql (one rule each); this view adds the attempt's last terminal
-- stage line, its first first_token route and its last nonce_disposition (by escrow and
-- nonce).
-- Reads: attempts, log_attempt_lines, log_nonce_dispositions (an empty dispatch_phase= reads NULL there).
CREATE OR REPLACE VIEW log_attempts AS
WITH term AS (
    SELECT escrow, nonce,
           last(name ORDER BY pos) FILTER (WHERE name NOT IN ('first_token', 'nonce_disposition')) AS terminal_stage,
           first(route ORDER BY pos) FILTER (WHERE name = 'first_token') AS first_token_route,
           last(disposition ORDER BY pos) FILTER (WHERE name = 'nonce_disposition') AS disposition,
           last(dispatch_phase ORDER BY pos) FILTER (WHERE name = 'nonce_disposition') AS dispatch_phase
    FROM (SELECT name, escrow, nonce, pos, route, NULL AS disposition, NULL AS dispatch_phase
          FROM log_attempt_lines
          WHERE name IN ('send_completed', 'send_failed', 'empty_stream', 'error_stream', 'phase_transition_aborted',
                         'process_response_failed', 'winner_stream_hard_timeout', 'speculative_attempt_canceled',
                         'winner_write_ctx_cancelled', 'first_token')
          UNION ALL
          SELECT 'nonce_disposition', escrow, nonce, file_id::BIGINT * 1000000000000 + line_no, NULL,
                 disposition, dispatch_phase
          FROM log_nonce_dispositions
          WHERE escrow IS NOT NULL AND nonce IS NOT NULL)
    GROUP BY escrow, nonce
)
SELECT a.file_id, a.line_no, a.ts, a.request, a.escrow, a.nonce, a.host, a.host_idx, a.participant, a.model,
       a.input_bytes, a.winner, a.finished, a.responsive, a.has_receipt, a.confirmed_at, a.attempt_ms,
       a.output_chunks, a.content_chunks, a.output_bytes, a.stream_bytes_read, a.usage_tokens, a.max_gap_ms,
       a.mean_gap_ms, a.content_source, a.error_source, a.probe, a.suspicious, a.failure_reason, a.stall_count,
       a.stalls, a.role, a.primary_nonce, a.primary_inferred, a.decision, a.suppressed_loser,
       t.terminal_stage, a.stream_suppressed, t.first_token_route, a.receipt_ms, t.disposition, t.dispatch_phase
FROM attempts a
LEFT JOIN term t ON t.escrow = a.escrow AND t.nonce = a.nonce;
