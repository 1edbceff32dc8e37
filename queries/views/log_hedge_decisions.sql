-- The hedging decision of each request (decision_made: logged with the primary's nonce).
CREATE OR REPLACE VIEW log_hedge_decisions AS
SELECT
    file_id, line_no, ts, request, escrow,
    nonce AS primary_nonce,
    host AS primary_host,
    fields->>'decision' AS decision,
    TRY_CAST(fields->>'delay_ms' AS BIGINT) AS delay_ms,
    TRY_CAST(fields->>'delay_ms' AS BIGINT) = 0 AS immediate,     -- a secondary starts at once
    TRY_CAST(fields->>'max_attempts' AS INTEGER) AS max_attempts,
    TRY_CAST(fields->>'group_size' AS INTEGER) AS group_size,
    coalesce(TRY_CAST(fields->>'primary_no_winner' AS BOOLEAN), false) AS primary_no_winner,
    fields->>'primary_no_winner_reason' AS primary_no_winner_reason,
    fields->>'primary_quarantine_mode' AS primary_quarantine_mode,
    TRY_CAST(fields->>'primary_failure_strikes' AS INTEGER) AS primary_failure_strikes
FROM log_events
WHERE kind = 'stage' AND name = 'decision_made';
