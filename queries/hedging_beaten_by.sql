-- hedging_beaten_by: for each primary host, who beat it and under which decision: races in
-- [$since, $until) whose primary lost to a secondary (definitions: views/hedge_attempts.sql),
-- per (primary host, decision, winner host, the winner's start reason), with how many of
-- those races were rescues (useful hedges) and how many primaries ran on as suppressed losers.
-- Reads: hedge_races.
SELECT primary_host, decision, winner_host, winner_start_reason,
       count(*) AS races,
       count(*) FILTER (WHERE rescue) AS rescued,
       count(*) FILTER (WHERE primary_suppressed) AS primary_suppressed
FROM hedge_races
WHERE primary_lost
  AND in_range(race_ts, $since, $until)
GROUP BY ALL
ORDER BY primary_host, races DESC, decision, winner_host, winner_start_reason NULLS LAST;
