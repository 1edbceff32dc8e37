-- hedging_host_models: per host, the model of the first hedged race in [$since, $until) it took
-- part in (race order: time, then request; non-probe attempts): the model its findings name.
-- Reads: hedge_races, hedge_attempts.
SELECT t.host, first(r.model ORDER BY r.race_ts NULLS LAST, r.request) AS model
FROM hedge_attempts t JOIN hedge_races r USING (request)
WHERE r.hedged AND NOT t.probe
  AND ($since IS NULL OR r.race_ts >= CAST($since AS TIMESTAMPTZ))
  AND ($until IS NULL OR r.race_ts < CAST($until AS TIMESTAMPTZ))
  AND (($since IS NULL AND $until IS NULL) OR r.race_ts IS NOT NULL)
GROUP BY t.host;
