-- The prediction rule of `auditor hedging`, ONE DEFINITION: what the hosts' perf windows
-- (their priors: views/hedge_priors.sql) predicted for a race. Both the counts over every race
-- (queries/hedging_predictions.sql) and the listed races' predicted_winner and loss_predictable
-- (queries/hedging_race_attempts.sql) apply these; hedging.py only passes the thresholds.
-- prior_enough(prior_samples, min_samples): the host had at least min_samples prior samples.
-- host_prior(enough, ttft_q, receipt_q): an attempt's prior as the rule reads it (the quartiles' p25,
--     median, p75 of its host's first-token and receipt times, and whether there were enough).
-- prior_rated(pr): the prior can rate the host: enough samples and both medians.
-- predicted_attempt(pos, rated, pr, role, nonce, place): an aggregate over a race's attempts:
--     the pos of the attempt whose host had the lowest prior first-token median (then receipt
--     median, then the primary, then the nonce, then its place) among the rated ones (enough
--     samples and both medians); NULL when fewer than two are rated.
-- hedge_predict(slow, fast, clear_ratio): was fast's host predicted faster than slow's before the
--     race? has_prediction: both had enough samples and a signal (first token, then receipt)
--     has both medians; ratio = slow median / fast median (prior_ratio: fast median 0 gives inf
--     when slow > 0, else 1); clear when a signal's ratio is >= clear_ratio and slow's p25 >
--     fast's p75 (ratio is then that signal's, else the first known signal's).
CREATE OR REPLACE MACRO prior_enough(prior_samples, min_samples) AS coalesce(prior_samples, 0) >= min_samples;
CREATE OR REPLACE MACRO host_prior(enough, ttft_q, receipt_q) AS
    {'enough': enough, 'ttft_p25': ttft_q[1], 'ttft_med': ttft_q[2], 'ttft_p75': ttft_q[3],
     'receipt_p25': receipt_q[1], 'receipt_med': receipt_q[2], 'receipt_p75': receipt_q[3]};
CREATE OR REPLACE MACRO prior_rated(pr) AS pr.enough AND pr.ttft_med IS NOT NULL AND pr.receipt_med IS NOT NULL;
CREATE OR REPLACE MACRO predicted_attempt(pos, rated, pr, role, nonce, place) AS
    CASE WHEN count(*) FILTER (WHERE rated) >= 2
         THEN arg_min(pos, {'ttft': pr.ttft_med, 'receipt': pr.receipt_med,
                            'secondary': coalesce(role <> 'primary', true), 'nonce': nonce, 'place': place})
                  FILTER (WHERE rated) END;
CREATE OR REPLACE MACRO prior_ratio(slow_med, fast_med) AS
    CASE WHEN fast_med > 0 THEN slow_med / fast_med WHEN slow_med > 0 THEN 'inf'::DOUBLE ELSE 1.0 END;
CREATE OR REPLACE MACRO prior_signal_clear(slow_med, fast_med, slow_p25, fast_p75, clear_ratio) AS
    slow_med IS NOT NULL AND fast_med IS NOT NULL AND prior_ratio(slow_med, fast_med) >= clear_ratio
    AND slow_p25 > fast_p75;
CREATE OR REPLACE MACRO hedge_predict(s, f, clear_ratio) AS {
    'has_prediction': s.enough AND f.enough
                      AND ((s.ttft_med IS NOT NULL AND f.ttft_med IS NOT NULL)
                           OR (s.receipt_med IS NOT NULL AND f.receipt_med IS NOT NULL)),
    'clear': s.enough AND f.enough
             AND (prior_signal_clear(s.ttft_med, f.ttft_med, s.ttft_p25, f.ttft_p75, clear_ratio)
                  OR prior_signal_clear(s.receipt_med, f.receipt_med, s.receipt_p25, f.receipt_p75, clear_ratio)),
    'ratio': CASE WHEN NOT (s.enough AND f.enough) THEN NULL
                  WHEN prior_signal_clear(s.ttft_med, f.ttft_med, s.ttft_p25, f.ttft_p75, clear_ratio)
                      THEN prior_ratio(s.ttft_med, f.ttft_med)
                  WHEN prior_signal_clear(s.receipt_med, f.receipt_med, s.receipt_p25, f.receipt_p75, clear_ratio)
                      THEN prior_ratio(s.receipt_med, f.receipt_med)
                  WHEN s.ttft_med IS NOT NULL AND f.ttft_med IS NOT NULL THEN prior_ratio(s.ttft_med, f.ttft_med)
                  WHEN s.receipt_med IS NOT NULL AND f.receipt_med IS NOT NULL
                      THEN prior_ratio(s.receipt_med, f.receipt_med) END};
