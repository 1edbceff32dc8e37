-- hedging_races: the hedged races (a race with at least one secondary; definitions in
-- views/hedge_attempts.sql) whose time is in [$since, $until), one row each, in time order:
-- its decision, primary, winner and whether the hedge rescued the primary. $listed (NULL:
-- every race) keeps the $listed races with the most wasted work (Σ of their non-probe
-- attempts' wasted_ms; ties: the earlier race). Their attempts are
-- queries/hedging_race_attempts.sql; Python joins the two into the per-race list.
-- Reads: hedge_races, hedge_attempts.
WITH r AS (
    SELECT request, race_ts, escrow, model, decision, delay_ms, primary_nonce, primary_inferred,
           rescue, winner_host, winner_role, row_number() OVER (ORDER BY race_ts NULLS LAST, request) AS rn
    FROM hedge_races
    WHERE hedged
      AND ($since IS NULL OR race_ts >= CAST($since AS TIMESTAMPTZ))
      AND ($until IS NULL OR race_ts < CAST($until AS TIMESTAMPTZ))
      AND (($since IS NULL AND $until IS NULL) OR race_ts IS NOT NULL)
), waste AS (
    SELECT request, sum(coalesce(t.wasted_ms, 0)) AS wasted_ms
    FROM hedge_attempts t JOIN r USING (request)
    WHERE NOT t.probe
    GROUP BY request
)
SELECT r.* EXCLUDE (rn)
FROM r LEFT JOIN waste w USING (request)
QUALIFY $listed IS NULL OR row_number() OVER (ORDER BY coalesce(w.wasted_ms, 0) DESC, r.rn) <= $listed
ORDER BY r.rn;
