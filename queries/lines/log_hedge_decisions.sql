-- The hedging decision of each request (decision_made: logged with the primary's nonce).
SELECT
    file_id, line_no, ts, request, escrow,
    nonce AS primary_nonce,
    host AS primary_host,
    v[1] AS decision,
    TRY_CAST(v[2] AS BIGINT) AS delay_ms,
    TRY_CAST(v[2] AS BIGINT) = 0 AS immediate,     -- a secondary starts at once
    TRY_CAST(v[3] AS INTEGER) AS max_attempts,
    TRY_CAST(v[4] AS INTEGER) AS group_size,
    coalesce(TRY_CAST(v[5] AS BOOLEAN), false) AS primary_no_winner,
    v[6] AS primary_no_winner_reason,
    v[7] AS primary_quarantine_mode,
    TRY_CAST(v[8] AS INTEGER) AS primary_failure_strikes
FROM (SELECT *, json_extract_string(fields,
          ['decision', 'delay_ms', 'max_attempts', 'group_size', 'primary_no_winner', 'primary_no_winner_reason',
           'primary_quarantine_mode', 'primary_failure_strikes']) AS v
      FROM log_events
      WHERE kind = 'stage' AND name = 'decision_made')
