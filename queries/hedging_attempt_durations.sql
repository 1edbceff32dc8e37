-- hedging_attempt_durations: how far race_completed's attempt_ms can be trusted in the races of
-- [$since, $until) (#1935: gateway v5.1.0, fixed in v4.1.3, measured an attempt's attempt_ms,
-- and logged its race_completed line, when the whole request settled, not when the attempt
-- ended), against the attempt's own stage lines (definitions: views/hedge_attempts.sql):
--   attempts          non-probe attempts of those races
--   stage_timed       ... whose started and end-of-stream lines were both read (stage_ms known)
--   with_attempt_ms   ... of those, with an attempt_ms to compare
--   disagreements     ... whose attempt_ms differs from stage_ms by more than 1 s
--   disagreement_share  disagreements / with_attempt_ms
--   attempt_seconds_logged  Σ attempt_ms; attempt_seconds_used  Σ duration_ms (what the figures sum)
--   loser_ends_from_stage_lines  wasted losers whose race_completed line came more than 1 s after
--                     their stream ended: their waste is measured to the stage line
--   examples          up to 5 disagreeing attempts, the largest difference first
-- Reads: hedge_attempts.
WITH t AS (
    SELECT * FROM hedge_attempts
    WHERE NOT probe AND in_range(race_ts, $since, $until)
)
SELECT count(*) AS attempts,
       count(stage_ms) AS stage_timed,
       count(*) FILTER (WHERE stage_ms IS NOT NULL AND attempt_ms IS NOT NULL) AS with_attempt_ms,
       count(*) FILTER (WHERE attempt_ms_disagrees) AS disagreements,
       round(coalesce(sum(attempt_ms), 0) / 1000.0, 3) AS attempt_seconds_logged,
       round(coalesce(sum(duration_ms), 0) / 1000.0, 3) AS attempt_seconds_used,
       count(*) FILTER (WHERE wasted AND end_from_stage_line) AS loser_ends_from_stage_lines,
       coalesce(list({'request': request, 'nonce': nonce, 'host': host, 'role': role, 'attempt_ms': attempt_ms,
                      'stage_ms': stage_ms}
                     ORDER BY abs(attempt_ms - stage_ms) DESC, request, nonce)
                FILTER (WHERE attempt_ms_disagrees)[1:5], []) AS examples
FROM t;
