-- log_attempt_lines: the lines of one attempt, found by escrow and nonce (stage lines with
-- both): its start (prepared, poc_probe_prepared, started), receipt, first token,
-- winner_selected, suppression and cancellation, and the terminal stages log_attempts reads.
-- views/attempts.sql and views/log_attempts.sql group them per nonce.
--   pos         file_id x 10^12 + line_no: line order across files
--   elapsed_ms  receipt_received's elapsed_ms field; route: first_token's route field
SELECT file_id, line_no, ts, name, escrow, nonce,
       file_id::BIGINT * 1000000000000 + line_no AS pos,
       CASE WHEN name = 'receipt_received' THEN TRY_CAST(v[1] AS BIGINT) END AS elapsed_ms,
       CASE WHEN name = 'first_token' THEN v[2] END AS route
FROM (SELECT *, CASE WHEN name IN ('receipt_received', 'first_token')
                     THEN json_extract_string(fields, ['elapsed_ms', 'route']) END AS v
      FROM log_events
      WHERE kind = 'stage' AND nonce IS NOT NULL AND escrow IS NOT NULL
        AND name IN ('prepared', 'poc_probe_prepared', 'started', 'receipt_received', 'first_token', 'winner_selected',
                     'speculative_attempt_canceled', 'stream_suppressed',
                     'send_completed', 'send_failed', 'empty_stream', 'error_stream', 'phase_transition_aborted',
                     'process_response_failed', 'winner_stream_hard_timeout', 'winner_write_ctx_cancelled'))
