-- hedging_unresponsive: every primary_unresponsive decision (gateway-logs.md 4.1 rule 1:
-- with UnresponsiveThreshold 1.0 a single non-responsive sample in the perf window fires
-- it, #2103) in [$since, $until), with what the primary then did. A false positive: the
-- primary delivered its first token (a first_token line, or output content) and finished
-- normally (race_completed finished=true, responsive=true), whether or not it won.
-- Reads: hedge_attempts.
SELECT request, race_ts, escrow, nonce AS primary_nonce, host AS primary_host, model,
       finished, responsive, winner, suppressed_loser, failure_reason, receipt_ms, ttft_ms,
       attempt_ms, output_bytes, winner_host,
       (finished AND coalesce(responsive, false)
        AND (first_token_ts IS NOT NULL OR coalesce(content_chunks, 0) > 0)) AS false_positive
FROM hedge_attempts
WHERE role = 'primary' AND decision = 'primary_unresponsive'
  AND in_range(race_ts, $since, $until)
ORDER BY race_ts, request;
