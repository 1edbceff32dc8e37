-- hedging_race_attempts: the attempts of the hedged races of queries/hedging_races.sql (the
-- same range) whose request is in $requests (NULL: every race of the range), one row per
-- attempt, in race_place's order (views/race_primary.sql: the race's primary row first), with what was known about its host before the race was
-- dispatched (views/hedge_priors.sql: the receipt and first-token quartiles of the host's
-- latest 256 samples in the hour before the race, the gateway's perf window). latency_ms: the
-- race's start -> this attempt's first token. Python uses these rows as they are for the
-- per-race list; the counts over every race (predictability, counterfactuals) are
-- queries/hedging_predictions.sql's.
-- Reads: hedge_attempts, hedge_races, hedge_priors.
WITH races AS (
    SELECT request FROM hedge_races
    WHERE hedged
      AND in_range(race_ts, $since, $until)
      AND ($requests IS NULL OR request IN (SELECT unnest($requests)))
), timed AS (
    SELECT t.*, CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
                     THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END AS start_offset_ms
    FROM hedge_attempts t JOIN races USING (request)
    WHERE NOT t.probe
)
SELECT t.request, t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished, t.cancelled, t.failure_reason,
       t.suppressed_loser, t.wasted, t.attempt_ms, t.after_winner_ms, t.wasted_ms, t.output_chunks,
       t.output_bytes, t.usage_tokens, t.receipt_ms, t.ttft_ms, t.start_offset_ms, t.stall_count,
       t.start_offset_ms + t.ttft_ms AS latency_ms,
       coalesce(p.prior_samples, 0) AS prior_samples,
       p.ttft_q[2] AS prior_ttft_median_ms, p.ttft_q[1] AS prior_ttft_p25_ms, p.ttft_q[3] AS prior_ttft_p75_ms,
       p.receipt_q[2] AS prior_receipt_median_ms, p.receipt_q[1] AS prior_receipt_p25_ms,
       p.receipt_q[3] AS prior_receipt_p75_ms
FROM timed t
LEFT JOIN hedge_priors p ON p.file_id = t.file_id AND p.line_no = t.line_no
ORDER BY t.request, race_place(t.role, t.nonce, t.file_id::BIGINT * 1000000000000 + t.line_no);
