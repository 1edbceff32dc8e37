-- hedging_rescues: what the rescues among the hedged races in [$since, $until) saved in latency
-- (definitions: views/hedge_attempts.sql; a race's attempts in queries/hedging_race_attempts.sql's
-- order, its primary the first when its role is primary, its winner the first with winner=true):
--   timed                 rescues where both the primary and the winner have a latency (race
--                         start -> first token)
--   latency_saved_ms      Σ over those of the primary's latency minus the winner's
--   primary_never_delivered  rescues whose primary has no latency (or that have no primary)
-- Reads: hedge_races, hedge_attempts.
WITH races AS (
    SELECT request FROM hedge_races
    WHERE hedged AND rescue
      AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
      AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
      AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
), a AS (
    SELECT t.request, t.role, t.winner,
           CASE WHEN t.started_ts IS NOT NULL AND t.race_ts IS NOT NULL
                THEN epoch_ms(t.started_ts) - epoch_ms(t.race_ts) END + t.ttft_ms AS latency_ms,
           row_number() OVER (PARTITION BY t.request ORDER BY t.role <> 'primary', t.nonce) AS ord
    FROM hedge_attempts t JOIN races USING (request)
    WHERE NOT t.probe
), r AS (
    SELECT request,
           first(latency_ms) FILTER (WHERE ord = 1 AND role = 'primary') AS primary_ms,
           first(latency_ms ORDER BY ord) FILTER (WHERE winner) AS winner_ms
    FROM a GROUP BY request
)
SELECT count(*) FILTER (WHERE primary_ms IS NOT NULL AND winner_ms IS NOT NULL) AS timed,
       coalesce(sum(primary_ms - winner_ms), 0) AS latency_saved_ms,
       count(*) FILTER (WHERE primary_ms IS NULL) AS primary_never_delivered
FROM r;
