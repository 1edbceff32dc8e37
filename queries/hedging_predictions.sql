-- hedging_predictions: what the hosts' perf windows predicted for the hedged races in
-- [$since, $until) (the races of queries/hedging_races.sql; their attempts and priors are those
-- of queries/hedging_race_attempts.sql), and what four remedies would have saved: one row.
-- hedging.py's thresholds are the parameters ($min_samples, $clear_ratio, $replace_ratio,
-- $ab_min_comparisons, $ab_agreement, the decisions $speedup_decisions and $ab_decision).
-- A race's attempts are in their list order (primary first, then by nonce); its primary is
-- the first when its role is primary, its winner the first with winner=true.
--   predicted  the attempt whose host had the lowest prior first-token median (then receipt
--              median, then the primary, then the nonce) among those with $min_samples prior
--              samples and both medians; none when fewer than two qualify
--   predict(slow, fast)  none unless both hosts have $min_samples prior samples and a signal
--              (first token, then receipt) has both medians; ratio = slow median / fast median
--              (fast median 0: inf when slow > 0, else 1); clear when a signal's ratio is
--              >= $clear_ratio and slow's p25 > fast's p75 (ratio is then that signal's)
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
-- Times are in ms (hedging.py prints seconds); latency counts: equal latencies count in none.
-- Reads: hedge_races, hedge_attempts, hedge_priors.
WITH races AS (
    SELECT request, decision, rescue, row_number() OVER (ORDER BY race_ts NULLS LAST, request) AS rn
    FROM hedge_races
    WHERE hedged
      AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
      AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
      AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
), listed AS (
    SELECT t.request, r.rn, r.decision, r.rescue, t.nonce, t.host, t.role, t.start_reason, t.winner, t.finished,
           t.attempt_ms, t.after_winner_ms, t.output_bytes, t.ttft_ms,
           CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
                THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END + t.ttft_ms AS latency_ms,
           coalesce(p.prior_samples, 0) >= $min_samples AS enough,
           p.ttft_q[2] AS ttft_med, p.ttft_q[1] AS ttft_p25, p.ttft_q[3] AS ttft_p75,
           p.receipt_q[2] AS receipt_med, p.receipt_q[1] AS receipt_p25, p.receipt_q[3] AS receipt_p75,
           row_number() OVER (ORDER BY t.request, t.role <> 'primary', t.nonce) AS ord   -- list order
    FROM hedge_attempts t JOIN races r USING (request)
    LEFT JOIN hedge_priors p ON p.file_id = t.file_id AND p.line_no = t.line_no
    WHERE NOT t.probe
), att AS MATERIALIZED (
    SELECT *, enough AND ttft_med IS NOT NULL AND receipt_med IS NOT NULL AS rated FROM listed
), picks AS (
    SELECT request, any_value(rn) AS rn, any_value(decision) AS decision, any_value(rescue) AS rescue,
           count(*) AS attempts, sum(coalesce(attempt_ms, 0)) AS attempt_ms,
           sum(coalesce(output_bytes, 0)) AS output_bytes,
           min(ord) FILTER (WHERE role = 'primary') AS p_ord,   -- the first, as primaries come first
           min(ord) FILTER (WHERE winner) AS w_ord,
           CASE WHEN count(*) FILTER (WHERE rated) >= 2 THEN arg_min(ord, (ttft_med, receipt_med,
               coalesce(role <> 'primary', true), nonce, ord)) FILTER (WHERE rated) END AS predicted_ord,
           min(ord) FILTER (WHERE role = 'secondary' AND start_reason = decision
                            AND list_contains($speedup_decisions, decision)) AS candidate_ord
    FROM att GROUP BY request
), race AS MATERIALIZED (
    SELECT k.*, p.host AS p_host, p.finished AS p_finished, p.latency_ms AS p_latency_ms,
           w.latency_ms AS w_latency_ms, w.enough AS w_enough
    FROM picks k
    LEFT JOIN att p ON p.request = k.request AND p.ord = k.p_ord
    LEFT JOIN att w ON w.request = k.request AND w.ord = k.w_ord
), pairs AS (
    -- the (slow, fast) attempts the prediction rule compares
    SELECT k.kind, r.*, f.ord AS f_ord, f.finished OR f.winner AS f_served, f.ttft_ms AS f_ttft_ms,
           f.attempt_ms AS f_attempt_ms, f.output_bytes AS f_output_bytes,
           s.enough AND f.enough AS enough,
           s.ttft_med IS NOT NULL AND f.ttft_med IS NOT NULL AS ttft_known,
           s.receipt_med IS NOT NULL AND f.receipt_med IS NOT NULL AS receipt_known,
           CASE WHEN f.ttft_med > 0 THEN s.ttft_med / f.ttft_med
                WHEN s.ttft_med > 0 THEN 'inf'::DOUBLE ELSE 1.0 END AS ttft_ratio,
           CASE WHEN f.receipt_med > 0 THEN s.receipt_med / f.receipt_med
                WHEN s.receipt_med > 0 THEN 'inf'::DOUBLE ELSE 1.0 END AS receipt_ratio,
           s.ttft_p25 > f.ttft_p75 AS ttft_apart, s.receipt_p25 > f.receipt_p75 AS receipt_apart
    FROM (SELECT request, 'loss' AS kind, w_ord AS f_ord FROM race
          WHERE p_ord IS NOT NULL AND w_ord IS NOT NULL AND w_ord <> p_ord AND NOT rescue
          UNION ALL
          SELECT request, 'speed_aware_primary', predicted_ord FROM race
          WHERE p_ord IS NOT NULL AND predicted_ord IS NOT NULL AND predicted_ord <> p_ord
          UNION ALL
          SELECT request, 'replace_instead_of_add', candidate_ord FROM race
          WHERE p_ord IS NOT NULL AND candidate_ord IS NOT NULL) k
    JOIN race r ON r.request = k.request
    JOIN att s ON s.request = k.request AND s.ord = r.p_ord
    JOIN att f ON f.request = k.request AND f.ord = k.f_ord
), predicted AS (
    SELECT *, enough AND (ttft_known OR receipt_known) AS has_prediction,
           enough AND ((ttft_known AND ttft_ratio >= $clear_ratio AND ttft_apart)
                       OR (receipt_known AND receipt_ratio >= $clear_ratio AND receipt_apart)) AS clear,
           CASE WHEN NOT enough THEN NULL
                WHEN ttft_known AND ttft_ratio >= $clear_ratio AND ttft_apart THEN ttft_ratio
                WHEN receipt_known AND receipt_ratio >= $clear_ratio AND receipt_apart THEN receipt_ratio
                WHEN ttft_known THEN ttft_ratio
                WHEN receipt_known THEN receipt_ratio END AS ratio
    FROM pairs
), comparisons AS (
    SELECT a.rn, least(a.host, b.host) AS lo, greatest(a.host, b.host) AS hi,
           CASE WHEN a.latency_ms <= b.latency_ms THEN a.host ELSE b.host END = least(a.host, b.host) AS lo_won
    FROM att a JOIN att b ON b.request = a.request AND b.ord > a.ord
    WHERE a.latency_ms IS NOT NULL AND b.latency_ms IS NOT NULL AND a.host <> b.host
), history AS (
    -- per pair of hosts, its comparisons up to and including each race that has one
    SELECT lo, hi, rn, sum(count(*)) OVER w AS compared, sum(count(*) FILTER (WHERE lo_won)) OVER w AS lo_won
    FROM comparisons GROUP BY lo, hi, rn
    WINDOW w AS (PARTITION BY lo, hi ORDER BY rn ROWS UNBOUNDED PRECEDING)
), samples AS (
    SELECT r.*, c.ord AS f_ord, c.attempt_ms AS f_attempt_ms, c.output_bytes AS f_output_bytes,
           least(r.p_host, c.host) AS lo, greatest(r.p_host, c.host) AS hi
    FROM race r JOIN att c ON c.request = r.request
    WHERE r.p_ord IS NOT NULL AND r.decision = $ab_decision AND c.role = 'secondary' AND c.start_reason = $ab_decision
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
           coalesce(f_ord = w_ord AND p_finished, false), coalesce(f_ord = w_ord AND NOT p_finished, false),
           p_latency_ms, w_latency_ms
    FROM skipped
    UNION ALL
    SELECT 'cancel_losers', 0, sum(a.after_winner_ms), sum(coalesce(a.output_bytes, 0)), false, false, NULL, NULL
    FROM att a JOIN race r ON r.request = a.request
    WHERE r.w_ord IS NOT NULL AND NOT a.winner AND a.after_winner_ms IS NOT NULL
    GROUP BY a.request
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
SELECT (SELECT count(*) FROM race WHERE predicted_ord IS NOT NULL AND w_ord IS NOT NULL AND w_enough)
           AS evaluable_races,
       (SELECT count(*) FROM race WHERE predicted_ord = w_ord AND w_enough) AS prediction_right,
       (SELECT coalesce(list(h), []) FROM hosts h) AS hosts,
       (SELECT coalesce(list(m), []) FROM remedies m) AS remedies;
