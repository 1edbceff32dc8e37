-- hedging_races: the attempts of every hedged race (a race with at least one secondary,
-- definitions in views/hedge_attempts.sql) in [$since, $until), one row per attempt, with
-- what was known about its host before the race was dispatched: the host's receipt and
-- first-token (started -> first_token) medians and quartiles over its attempts (any role,
-- any escrow, the same model) whose first token came in the 3600 s before the race's time
-- (the gateway's own perf window is 1 h / 256 samples; hedging.WINDOW_S says the same).
-- Python turns these into the per-race list, the predictability check and the
-- counterfactuals.
-- The trailing statistics are windowed aggregates over one time-ordered stream per host
-- (samples and the races' query points together), not a join of every race with every
-- sample (which grows with the square of the log): a query point sits 1 µs before its
-- race, so a sample counts when its first token came in [race - 3600 s - 1 µs, race).
-- Reads: hedge_attempts, hedge_races.
WITH races AS (
    SELECT request, race_ts FROM hedge_races
    WHERE hedged
      AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
      AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
      AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
), targets AS (
    SELECT a.* FROM hedge_attempts a JOIN races USING (request) WHERE NOT a.probe
), points AS (
    SELECT host, coalesce(model, '') AS model_key, first_token_ts AS t, ttft_ms, receipt_ms,
           NULL::VARCHAR AS request, NULL::BIGINT AS nonce
    FROM hedge_attempts
    WHERE NOT probe AND first_token_ts IS NOT NULL AND ttft_ms IS NOT NULL
      AND host IN (SELECT DISTINCT host FROM targets)
    UNION ALL
    SELECT host, coalesce(model, ''), race_ts - INTERVAL 1 MICROSECOND, NULL, NULL, request, nonce
    FROM targets WHERE race_ts IS NOT NULL
), windowed AS (
    SELECT request, nonce,
           count(ttft_ms) OVER w AS prior_samples,
           median(ttft_ms) OVER w AS prior_ttft_median_ms,
           quantile_cont(ttft_ms, 0.25) OVER w AS prior_ttft_p25_ms,
           quantile_cont(ttft_ms, 0.75) OVER w AS prior_ttft_p75_ms,
           median(receipt_ms) OVER w AS prior_receipt_median_ms,
           quantile_cont(receipt_ms, 0.25) OVER w AS prior_receipt_p25_ms,
           quantile_cont(receipt_ms, 0.75) OVER w AS prior_receipt_p75_ms
    FROM points
    WINDOW w AS (PARTITION BY host, model_key ORDER BY t
                 RANGE BETWEEN INTERVAL 3600 SECONDS PRECEDING AND CURRENT ROW)
), prior AS (
    SELECT * FROM windowed WHERE request IS NOT NULL
)
SELECT t.request, t.race_ts, t.escrow, t.model, t.decision, t.delay_ms, t.primary_nonce, t.primary_inferred,
       t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished, t.cancelled, t.failure_reason,
       t.suppressed_loser, t.wasted, t.rescue, t.winner_host, t.winner_role,
       t.attempt_ms, t.after_winner_ms, t.wasted_ms, t.output_chunks, t.output_bytes, t.usage_tokens,
       t.receipt_ms, t.ttft_ms, t.stall_count,
       CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
            THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END AS start_offset_ms,
       coalesce(tr.prior_samples, 0) AS prior_samples,
       tr.* EXCLUDE (request, nonce, prior_samples)
FROM targets t
LEFT JOIN prior tr ON tr.request = t.request AND tr.nonce = t.nonce
ORDER BY t.race_ts NULLS LAST, t.request, t.nonce;
