-- hedging_races: every hedged race (a race with at least one secondary; definitions in
-- views/hedge_attempts.sql) whose time is in [$since, $until), one row each, in time order:
-- its decision, primary, winner and whether the hedge rescued the primary. Its attempts are
-- queries/hedging_race_attempts.sql; Python joins the two into the per-race list.
-- Reads: hedge_races.
SELECT request, race_ts, escrow, model, decision, delay_ms, primary_nonce, primary_inferred,
       rescue, winner_host, winner_role
FROM hedge_races
WHERE hedged
  AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
  AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
  AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
ORDER BY race_ts NULLS LAST, request;
