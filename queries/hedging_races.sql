-- hedging_races: the attempts of every hedged race (a race with at least one secondary,
-- definitions in views/hedge_attempts.sql) in [$since, $until), one row per attempt, with
-- what was known about its host before the race was dispatched: the host's receipt and
-- first-token (started -> first_token) medians and quartiles over its attempts whose first
-- token came in the trailing $window_s seconds before the race's time (any role, any
-- escrow of the model; the gateway's own perf window is 1 h / 256 samples). Python turns
-- these into the per-race list, the predictability check and the counterfactuals.
-- Reads: hedge_attempts, hedge_races.
WITH races AS (
    SELECT request, race_ts FROM hedge_races
    WHERE hedged
      AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
      AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
      AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
), targets AS (
    SELECT a.* FROM hedge_attempts a JOIN races USING (request) WHERE NOT a.probe
), samples AS (
    SELECT host, model, first_token_ts AS t, ttft_ms, receipt_ms
    FROM hedge_attempts
    WHERE NOT probe AND first_token_ts IS NOT NULL AND ttft_ms IS NOT NULL
), prior AS (
    SELECT t.request, t.nonce,
           count(s.t) AS prior_samples,
           median(s.ttft_ms) AS prior_ttft_median_ms,
           quantile_cont(s.ttft_ms, 0.25) AS prior_ttft_p25_ms,
           quantile_cont(s.ttft_ms, 0.75) AS prior_ttft_p75_ms,
           median(s.receipt_ms) AS prior_receipt_median_ms,
           quantile_cont(s.receipt_ms, 0.25) AS prior_receipt_p25_ms,
           quantile_cont(s.receipt_ms, 0.75) AS prior_receipt_p75_ms
    FROM targets t
    LEFT JOIN samples s ON s.host = t.host AND s.model IS NOT DISTINCT FROM t.model
         AND s.t < t.race_ts AND s.t >= t.race_ts - to_seconds(CAST($window_s AS DOUBLE))
    GROUP BY t.request, t.nonce
)
SELECT t.request, t.race_ts, t.escrow, t.model, t.decision, t.delay_ms, t.primary_nonce, t.primary_inferred,
       t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished, t.cancelled, t.failure_reason,
       t.suppressed_loser, t.wasted, t.rescue, t.winner_host, t.winner_role,
       t.attempt_ms, t.after_winner_ms, t.wasted_ms, t.output_chunks, t.output_bytes, t.usage_tokens,
       t.receipt_ms, t.ttft_ms, t.stall_count,
       CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
            THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END AS start_offset_ms,
       tr.* EXCLUDE (request, nonce)
FROM targets t
JOIN prior tr ON tr.request = t.request AND tr.nonce = t.nonce
ORDER BY t.race_ts NULLS LAST, t.request, t.nonce;
