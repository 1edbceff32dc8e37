-- hedge_priors: for every attempt of a hedged race (a race with a secondary; definitions in
-- views/hedge_attempts.sql), what the gateway knew of its host when the race was dispatched:
-- the receipt and first-token (started -> first_token) quartiles of the host's samples in the
-- gateway's perf window (gateway-logs.md 4.3: 256 samples, 1 h) as it stood at the race's time.
--   sample         a non-probe attempt of the host (any role, any escrow, the same model) that
--                  delivered a first token, at its first_token time
--   window         the host's samples with race_ts - 1 h <= time < race_ts, the latest 256 of them
--   prior_samples  how many samples the window holds (0: none; the quartiles are then NULL)
--   ttft_q, receipt_q  [p25, median, p75] (continuous quantiles) over the window; receipt_q
--                  over the samples whose receipt_ms is known
-- hedging.WINDOW_S and hedging.WINDOW_SAMPLES say the same. A window of 256 samples is the
-- windowed aggregate over the 256 samples up to the host's latest sample before the race; a
-- window of fewer (a quiet host) is aggregated from its own samples, at most 255 per attempt.
-- Neither joins every race with every sample, which would grow with the square of the log.
-- Reads: hedge_attempts.
CREATE OR REPLACE VIEW hedge_priors AS
WITH samples AS (
    -- n: the sample's place among all samples, consecutive within a host and model
    SELECT host, coalesce(model, '') AS model_key, first_token_ts AS t, ttft_ms, receipt_ms,
           row_number() OVER (ORDER BY host, coalesce(model, ''), first_token_ts, file_id, line_no) AS n
    FROM hedge_attempts
    WHERE NOT probe AND first_token_ts IS NOT NULL AND ttft_ms IS NOT NULL
), marks AS (
    -- samples that share a time share one mark: the first and last place at that time
    SELECT host, model_key, t, min(n) AS first_n, max(n) AS last_n FROM samples GROUP BY ALL
), full_windows AS (
    -- the 256 samples up to each sample
    SELECT n,
           quantile_cont(ttft_ms, [0.25, 0.5, 0.75]) OVER w AS ttft_q,
           quantile_cont(receipt_ms, [0.25, 0.5, 0.75]) OVER w AS receipt_q
    FROM samples
    WINDOW w AS (PARTITION BY host, model_key ORDER BY n ROWS BETWEEN 255 PRECEDING AND CURRENT ROW)
), targets AS (
    SELECT file_id, line_no, request, nonce, host, coalesce(model, '') AS model_key, race_ts
    FROM hedge_attempts
    WHERE NOT probe AND race_ts IS NOT NULL
      AND request IN (SELECT request FROM hedge_attempts WHERE role = 'secondary')
), bounded AS (
    -- the window's places: from the first sample at or after race_ts - 1 h to the last before race_ts
    SELECT t.*, fm.first_n AS hour_first_n, lm.last_n
    FROM targets t
    ASOF LEFT JOIN marks lm ON lm.host = t.host AND lm.model_key = t.model_key AND t.race_ts > lm.t
    ASOF LEFT JOIN marks fm ON fm.host = t.host AND fm.model_key = t.model_key
                           AND t.race_ts - INTERVAL 1 HOUR <= fm.t
), windows AS (
    SELECT *, CASE WHEN last_n >= hour_first_n THEN least(last_n - hour_first_n + 1, 256) ELSE 0 END
                  AS prior_samples
    FROM bounded
), partial_windows AS (
    -- a window of fewer than 256 samples, from its samples
    SELECT w.file_id, w.line_no,
           quantile_cont(s.ttft_ms, [0.25, 0.5, 0.75]) AS ttft_q,
           quantile_cont(s.receipt_ms, [0.25, 0.5, 0.75]) AS receipt_q
    FROM (SELECT file_id, line_no, unnest(range(hour_first_n, last_n + 1)) AS n
          FROM windows WHERE prior_samples BETWEEN 1 AND 255) w
    JOIN samples s ON s.n = w.n
    GROUP BY w.file_id, w.line_no
)
SELECT w.file_id, w.line_no, w.request, w.nonce, w.host, w.race_ts, w.prior_samples,
       CASE WHEN w.prior_samples = 256 THEN f.ttft_q ELSE p.ttft_q END AS ttft_q,
       CASE WHEN w.prior_samples = 256 THEN f.receipt_q ELSE p.receipt_q END AS receipt_q
FROM windows w
LEFT JOIN full_windows f ON f.n = w.last_n AND w.prior_samples = 256
LEFT JOIN partial_windows p ON p.file_id = w.file_id AND p.line_no = w.line_no;
