-- hedging_predictions: what the hosts' perf windows predicted for the hedged races in
-- [$since, $until) (the races of queries/hedging_races.sql; their attempts and priors are those
-- of queries/hedging_race_attempts.sql), what four remedies would have saved, and (from the
-- same pass over the races) the rescues' latency and each host's model: one row.
-- hedging.py's thresholds are the parameters ($min_samples, $clear_ratio, $replace_ratio,
-- $ab_min_comparisons, $ab_agreement, the decisions $speedup_decisions and $ab_decision).
-- A race's attempts are in their list order (race_place: primary first, then by nonce); its
-- primary is its primary row (race_primary, views/race_primary.sql), its winner the first with
-- winner=true.
--   predicted  predicted_attempt, and predict(slow, fast) hedge_predict, with $min_samples and
--              $clear_ratio: the prediction rule, views/hedge_prediction.sql (the listed races'
--              predicted_winner and loss_predictable are queries/hedging_race_attempts.sql's, by
--              the same rule)
--   evaluable_races, prediction_right: races with a predicted attempt and a winner whose host
--              had $min_samples samples; those where the predicted attempt is the winner
--   hosts      per primary host: its losses (the winner is another attempt, no rescue), those
--              with a prediction predict(primary, winner), the clear ones and their requests
--              in race order
--   remedies   speed_aware_primary: the predicted attempt (not the primary) is clearly faster
--              than the primary; replace_instead_of_add: a $speedup_decisions race's first
--              secondary started by the decision has predict(primary, it).ratio >=
--              $replace_ratio. Either serves the race alone: every other attempt is saved;
--              when it finished or won, its latency is its own started -> first token
--              against the winner's (race start -> first token), else would_fail.
--              cancel_losers: races with a winner and losers with a time after it: that
--              time and the losers' output bytes. stop_ab_sampling: each $ab_decision sample
--              of a race with a primary, where the pair (primary host, sample host) has
--              >= $ab_min_comparisons direct comparisons in earlier races (race order: time,
--              then request) and one host won >= $ab_agreement of them: the sample is saved;
--              when it was the winner the primary serves (latency: its own against the
--              winner's) or, not finished, would_fail. A direct comparison: two attempts of
--              different hosts in a race that both have a latency; the faster has the lower
--              (the earlier in list order on a tie).
--   rescues_timed, rescue_latency_saved_ms  the rescues whose primary and winner both have a
--              latency, and Σ of the primary's minus the winner's; rescues_primary_never_delivered:
--              rescues whose primary has none (or that have no primary)
--   host_models  per host, the model of the first race it took part in (its findings' model)
-- Times are in ms (hedging.py prints seconds); latency counts: equal latencies count in none.
-- Reads: hedge_races, hedge_attempts, hedge_priors.
WITH races AS (
    SELECT request, decision, rescue, model, row_number() OVER (ORDER BY race_ts NULLS LAST, request) AS rn
    FROM hedge_races
    WHERE hedged
      AND in_range(race_ts, $since, $until)
), att AS MATERIALIZED (
    -- the attempts, each known by pos (its line), with what the rules read of it
    SELECT r.rn, t.end_pos AS pos, t.host, t.role, t.nonce, t.winner, t.finished,
           t.duration_ms AS attempt_ms, t.after_winner_ms, t.output_bytes, t.ttft_ms,   -- duration: #1935
           CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
                THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END + t.ttft_ms AS latency_ms,
           t.role = 'secondary' AND t.start_reason = r.decision
               AND list_contains($speedup_decisions, r.decision) AS candidate,
           t.role = 'secondary' AND t.start_reason = $ab_decision AND r.decision = $ab_decision AS sample,
           prior_enough(p.prior_samples, $min_samples) AS enough,
           host_prior(prior_enough(p.prior_samples, $min_samples), p.ttft_q, p.receipt_q) AS pr
    FROM hedge_attempts t JOIN races r USING (request)
    LEFT JOIN hedge_priors p ON p.file_id = t.file_id AND p.line_no = t.line_no
    WHERE NOT t.probe
), placed AS (
    -- place: where the attempt stands in its race's list (primary first, then by nonce)
    SELECT *, race_place(role, nonce, pos) AS place,                      -- views/race_primary.sql
           prior_rated(pr) AS rated
    FROM att
), picks AS (
    SELECT rn, count(*) AS attempts, sum(coalesce(attempt_ms, 0)) AS attempt_ms,
           sum(coalesce(output_bytes, 0)) AS output_bytes,
           race_primary(pos, role, pos) AS p_pos,                   -- the race's primary row
           arg_min(pos, place) FILTER (WHERE winner) AS w_pos,
           predicted_attempt(pos, rated, pr, role, nonce, place) AS predicted_pos,
           arg_min(pos, place) FILTER (WHERE candidate) AS candidate_pos,
           count(*) FILTER (WHERE NOT winner AND after_winner_ms IS NOT NULL) AS losers_after_winner,
           sum(after_winner_ms) FILTER (WHERE NOT winner AND after_winner_ms IS NOT NULL) AS after_winner_ms,
           sum(coalesce(output_bytes, 0)) FILTER (WHERE NOT winner AND after_winner_ms IS NOT NULL)
               AS after_winner_bytes
    FROM placed GROUP BY rn
), race AS MATERIALIZED (
    SELECT k.*, r.request, r.rescue, p.host AS p_host, p.finished AS p_finished, p.latency_ms AS p_latency_ms,
           w.latency_ms AS w_latency_ms, w.enough AS w_enough
    FROM picks k JOIN races r ON r.rn = k.rn
    LEFT JOIN att p ON p.pos = k.p_pos
    LEFT JOIN att w ON w.pos = k.w_pos
), pairs AS (
    -- the (slow, fast) attempts the prediction rule compares
    SELECT r.*, f.finished OR f.winner AS f_served, f.ttft_ms AS f_ttft_ms,
           f.attempt_ms AS f_attempt_ms, f.output_bytes AS f_output_bytes,
           hedge_predict(s.pr, f.pr, $clear_ratio) AS prediction
    FROM (SELECT 'loss' AS kind, w_pos AS f_pos, * FROM race
          WHERE p_pos IS NOT NULL AND w_pos IS NOT NULL AND w_pos <> p_pos AND NOT rescue
          UNION ALL
          SELECT 'speed_aware_primary', predicted_pos, * FROM race
          WHERE p_pos IS NOT NULL AND predicted_pos IS NOT NULL AND predicted_pos <> p_pos
          UNION ALL
          SELECT 'replace_instead_of_add', candidate_pos, * FROM race
          WHERE p_pos IS NOT NULL AND candidate_pos IS NOT NULL) r
    JOIN att s ON s.pos = r.p_pos
    JOIN att f ON f.pos = r.f_pos
), predicted AS (
    SELECT *, prediction.has_prediction AS has_prediction, prediction.clear AS clear, prediction.ratio AS ratio
    FROM pairs
), timed AS (
    SELECT rn, place, host, latency_ms FROM placed WHERE latency_ms IS NOT NULL
), comparisons AS (
    SELECT a.rn, least(a.host, b.host) AS lo, greatest(a.host, b.host) AS hi,
           CASE WHEN a.latency_ms <= b.latency_ms THEN a.host ELSE b.host END = least(a.host, b.host) AS lo_won
    FROM timed a JOIN timed b ON b.rn = a.rn AND b.place > a.place
    WHERE a.host <> b.host
), history AS (
    -- per pair of hosts, its comparisons up to and including each race that has one
    SELECT lo, hi, rn, sum(count(*)) OVER w AS compared, sum(count(*) FILTER (WHERE lo_won)) OVER w AS lo_won
    FROM comparisons GROUP BY lo, hi, rn
    WINDOW w AS (PARTITION BY lo, hi ORDER BY rn ROWS UNBOUNDED PRECEDING)
), samples AS (
    SELECT r.*, c.pos AS f_pos, c.attempt_ms AS f_attempt_ms, c.output_bytes AS f_output_bytes,
           least(r.p_host, c.host) AS lo, greatest(r.p_host, c.host) AS hi
    FROM att c JOIN race r ON r.rn = c.rn
    WHERE c.sample AND r.p_pos IS NOT NULL
), skipped AS (
    SELECT s.* FROM samples s
    ASOF JOIN history h ON h.lo = s.lo AND h.hi = s.hi AND s.rn > h.rn
    WHERE h.compared >= $ab_min_comparisons
      AND greatest(h.lo_won, h.compared - h.lo_won)::DOUBLE / h.compared::DOUBLE >= $ab_agreement
), served AS (
    -- each race (each sample) a remedy changes: what it saves, and whether its latency is judged
    -- (cf_ms, the latency then, against actual_ms, the race's) or it would have failed
    SELECT kind, attempts - 1 AS attempts_saved, attempt_ms - coalesce(f_attempt_ms, 0) AS attempt_ms_saved,
           output_bytes - coalesce(f_output_bytes, 0) AS output_bytes_saved,
           f_served AS judged, NOT f_served AS would_fail, f_ttft_ms AS cf_ms, w_latency_ms AS actual_ms
    FROM predicted
    WHERE (kind = 'speed_aware_primary' AND clear) OR (kind = 'replace_instead_of_add' AND ratio >= $replace_ratio)
    UNION ALL
    SELECT 'stop_ab_sampling', 1, coalesce(f_attempt_ms, 0), coalesce(f_output_bytes, 0),
           coalesce(f_pos = w_pos AND p_finished, false), coalesce(f_pos = w_pos AND NOT p_finished, false),
           p_latency_ms, w_latency_ms
    FROM skipped
    UNION ALL
    SELECT 'cancel_losers', 0, after_winner_ms, after_winner_bytes, false, false, NULL, NULL
    FROM race WHERE w_pos IS NOT NULL AND losers_after_winner > 0
), remedies AS (
    SELECT kind AS remedy, count(*) AS races, sum(attempts_saved) AS attempts_saved,
           sum(attempt_ms_saved) AS attempt_ms_saved, sum(output_bytes_saved) AS output_bytes_saved,
           count(*) FILTER (WHERE judged AND cf_ms > actual_ms) AS latency_worse,
           coalesce(sum(cf_ms - actual_ms) FILTER (WHERE judged AND cf_ms > actual_ms), 0) AS latency_added_ms,
           count(*) FILTER (WHERE judged AND cf_ms < actual_ms) AS latency_better,
           coalesce(sum(actual_ms - cf_ms) FILTER (WHERE judged AND cf_ms < actual_ms), 0) AS latency_saved_ms,
           count(*) FILTER (WHERE judged AND (cf_ms IS NULL OR actual_ms IS NULL)) AS latency_unknown,
           count(*) FILTER (WHERE would_fail) AS would_fail
    FROM served GROUP BY kind
), hosts AS (
    SELECT p_host AS label, count(*) AS losses, count(*) FILTER (WHERE has_prediction) AS with_prediction,
           count(*) FILTER (WHERE clear) AS predictable,
           coalesce(list(request ORDER BY rn) FILTER (WHERE clear), []) AS predictable_requests
    FROM predicted WHERE kind = 'loss' GROUP BY p_host
)
SELECT (SELECT count(*) FROM race WHERE predicted_pos IS NOT NULL AND w_enough) AS evaluable_races,
       (SELECT count(*) FROM race WHERE predicted_pos = w_pos AND w_enough) AS prediction_right,
       (SELECT coalesce(list(h), []) FROM hosts h) AS hosts,
       (SELECT coalesce(list(m), []) FROM remedies m) AS remedies,
       (SELECT count(*) FROM race WHERE rescue AND p_latency_ms IS NOT NULL AND w_latency_ms IS NOT NULL)
           AS rescues_timed,
       (SELECT coalesce(sum(p_latency_ms - w_latency_ms), 0) FROM race WHERE rescue) AS rescue_latency_saved_ms,
       (SELECT count(*) FROM race WHERE rescue AND p_latency_ms IS NULL) AS rescues_primary_never_delivered,
       (SELECT coalesce(list({'host': f.host, 'model': r.model}), [])
        FROM (SELECT host, min(rn) AS rn FROM att GROUP BY host) f JOIN races r ON r.rn = f.rn) AS host_models;
