-- hedging_races: the hedged races (a race with at least one secondary; definitions in
-- views/hedge_attempts.sql) whose time is in [$since, $until), one row each, in time order:
-- its decision, primary, winner and whether the hedge rescued the primary. $listed (NULL:
-- every race) keeps the $listed races with the most wasted work (hedge_races.wasted_ms, the
-- Σ of its attempts' wasted_ms, none counting 0; ties: the earlier race). Their attempts are
-- queries/hedging_race_attempts.sql; Python joins the two into the per-race list. $page races
-- from the $offset-th on (NULL, 0: all), for a list written a page at a time (--all-races).
-- $hosts (NULL: every race): only the races with an attempt (not a probe) of one of these host
-- labels (--participant).
-- Reads: hedge_races, hedge_attempts.
WITH r AS (
    SELECT request, race_ts, escrow, model, decision, delay_ms, primary_nonce, primary_inferred,
           rescue, winner_host, winner_role, coalesce(wasted_ms, 0) AS wasted_ms
    FROM hedge_races
    WHERE hedged
      AND in_range(race_ts, $since, $until)
      AND ($hosts IS NULL OR request IN (SELECT request FROM hedge_attempts
                                         WHERE NOT probe AND host IN (SELECT unnest($hosts))))
), most AS (
    SELECT * FROM r ORDER BY wasted_ms DESC, race_ts NULLS LAST, request LIMIT $listed
)
SELECT * EXCLUDE (wasted_ms) FROM most ORDER BY race_ts NULLS LAST, request LIMIT $page OFFSET $offset;
