-- hedging_race_attempts: the attempts of the hedged races of queries/hedging_races.sql (the
-- same range) whose request is in $requests (NULL: every race of the range), one row per
-- attempt, in race_place's order (views/race_primary.sql: the race's primary row first), with
-- what was known about its host before the race was dispatched (views/hedge_priors.sql: the
-- receipt and first-token quartiles of the host's latest 256 samples in the hour before the
-- race, the gateway's perf window). latency_ms: the race's start -> this attempt's first token.
-- Python uses these rows as they are for the per-race list, but two facts of the race each row
-- carries (hedging.py takes them off into the race): race_predicted_winner, the host of the
-- race's predicted attempt, and race_loss_predictable, whether the primary's loss was
-- predictable (predict(primary, winner).clear; NULL when the primary did not lose, the hedge
-- rescued it, or no prediction was made), by the prediction rule (views/hedge_prediction.sql,
-- thresholds $min_samples and $clear_ratio). The counts over every race (predictability,
-- counterfactuals) are queries/hedging_predictions.sql's, by the same rule.
-- Reads: hedge_attempts, hedge_races, hedge_priors.
WITH races AS (
    SELECT request, rescue FROM hedge_races
    WHERE hedged
      AND in_range(race_ts, $since, $until)
      AND ($requests IS NULL OR request IN (SELECT unnest($requests)))
), timed AS (
    SELECT t.*, CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
                     THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END AS start_offset_ms,
           t.end_pos AS pos
    FROM hedge_attempts t JOIN races USING (request)
    WHERE NOT t.probe
), rated AS (
    SELECT t.*, p.prior_samples, p.ttft_q, p.receipt_q,
           host_prior(prior_enough(p.prior_samples, $min_samples), p.ttft_q, p.receipt_q) AS pr,
           race_place(t.role, t.nonce, t.pos) AS place
    FROM timed t
    LEFT JOIN hedge_priors p ON p.file_id = t.file_id AND p.line_no = t.line_no
), picks AS (
    SELECT request, race_primary(pos, role, pos) AS p_pos, arg_min(pos, place) FILTER (WHERE winner) AS w_pos,
           predicted_attempt(pos, prior_rated(pr), pr, role, nonce, place) AS predicted_pos
    FROM rated GROUP BY request
), verdicts AS (
    SELECT k.request, d.host AS race_predicted_winner,
           CASE WHEN k.p_pos IS NULL OR k.w_pos IS NULL OR k.w_pos = k.p_pos OR r.rescue THEN NULL
                ELSE hedge_predict(p.pr, w.pr, $clear_ratio) END AS pw
    FROM picks k JOIN races r USING (request)
    LEFT JOIN rated p ON p.pos = k.p_pos
    LEFT JOIN rated w ON w.pos = k.w_pos
    LEFT JOIN rated d ON d.pos = k.predicted_pos
)
SELECT t.request, t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished, t.cancelled, t.failure_reason,
       t.suppressed_loser, t.wasted, t.attempt_ms, t.after_winner_ms, t.wasted_ms, t.output_chunks,
       t.output_bytes, t.usage_tokens, t.receipt_ms, t.ttft_ms, t.start_offset_ms, t.stall_count,
       t.start_offset_ms + t.ttft_ms AS latency_ms,
       coalesce(t.prior_samples, 0) AS prior_samples,
       t.ttft_q[2] AS prior_ttft_median_ms, t.ttft_q[1] AS prior_ttft_p25_ms, t.ttft_q[3] AS prior_ttft_p75_ms,
       t.receipt_q[2] AS prior_receipt_median_ms, t.receipt_q[1] AS prior_receipt_p25_ms,
       t.receipt_q[3] AS prior_receipt_p75_ms,
       v.race_predicted_winner,
       CASE WHEN v.pw.has_prediction THEN coalesce(v.pw.clear, false) END AS race_loss_predictable
FROM rated t
JOIN verdicts v USING (request)
ORDER BY t.request, t.place;
