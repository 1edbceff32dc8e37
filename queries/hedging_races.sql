-- hedging_races: the attempts of every hedged race (a race with at least one secondary,
-- definitions in views/hedge_attempts.sql) in [$since, $until), one row per attempt, with
-- what was known about its host before the race was dispatched: the host's receipt and
-- first-token (started -> first_token) quartiles over its attempts (any role, any escrow,
-- the same model) as they stood at the host's latest first token before the race: the
-- 3600 s up to that sample (the gateway's own perf window is 1 h / 256 samples;
-- hedging.WINDOW_S says the same), and none when that sample is more than 3600 s old.
-- Python turns these into the per-race list, the predictability check and the
-- counterfactuals. The statistics are windowed aggregates over each host's time-ordered
-- samples, picked up by an as-of join, not a join of every race with every sample (which
-- grows with the square of the log).
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
    SELECT host, coalesce(model, '') AS model_key, first_token_ts AS t, ttft_ms, receipt_ms
    FROM hedge_attempts
    WHERE NOT probe AND first_token_ts IS NOT NULL AND ttft_ms IS NOT NULL
), stats AS (
    -- each host's statistics as they stood at each of its samples: the hour up to that sample
    SELECT host, model_key, t,
           count(*) OVER w AS n,
           quantile_cont(ttft_ms, [0.25, 0.5, 0.75]) OVER w AS ttft_q,
           quantile_cont(receipt_ms, [0.25, 0.5, 0.75]) OVER w AS receipt_q
    FROM samples
    WINDOW w AS (PARTITION BY host, model_key ORDER BY t
                 RANGE BETWEEN INTERVAL 3600 SECONDS PRECEDING AND CURRENT ROW)
), prior AS (
    -- as of the host's latest sample before the race, when that sample is within the hour
    SELECT t.request, t.nonce,
           CASE WHEN s.t >= t.race_ts - INTERVAL 3600 SECONDS THEN s.n ELSE 0 END AS prior_samples,
           CASE WHEN s.t >= t.race_ts - INTERVAL 3600 SECONDS THEN s.ttft_q END AS ttft_q,
           CASE WHEN s.t >= t.race_ts - INTERVAL 3600 SECONDS THEN s.receipt_q END AS receipt_q
    FROM targets t
    ASOF LEFT JOIN stats s ON s.host = t.host AND s.model_key = coalesce(t.model, '') AND t.race_ts > s.t
)
SELECT t.request, t.race_ts, t.escrow, t.model, t.decision, t.delay_ms, t.primary_nonce, t.primary_inferred,
       t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished, t.cancelled, t.failure_reason,
       t.suppressed_loser, t.wasted, t.rescue, t.winner_host, t.winner_role,
       t.attempt_ms, t.after_winner_ms, t.wasted_ms, t.output_chunks, t.output_bytes, t.usage_tokens,
       t.receipt_ms, t.ttft_ms, t.stall_count,
       CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
            THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END AS start_offset_ms,
       coalesce(tr.prior_samples, 0) AS prior_samples,
       tr.ttft_q[2] AS prior_ttft_median_ms, tr.ttft_q[1] AS prior_ttft_p25_ms, tr.ttft_q[3] AS prior_ttft_p75_ms,
       tr.receipt_q[2] AS prior_receipt_median_ms, tr.receipt_q[1] AS prior_receipt_p25_ms,
       tr.receipt_q[3] AS prior_receipt_p75_ms
FROM targets t
LEFT JOIN prior tr ON tr.request = t.request AND tr.nonce = t.nonce
ORDER BY t.race_ts NULLS LAST, t.request, t.nonce;
