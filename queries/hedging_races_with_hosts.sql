-- hedging_races_with_hosts: how many hedged races whose time is in [$since, $until) have an
-- attempt (not a probe) of one of the host labels $hosts: what a participant's race list
-- (queries/hedging_races.sql with $hosts, --participant) is drawn from.
-- Reads: hedge_races, hedge_attempts.
SELECT count(*) AS races
FROM hedge_races
WHERE hedged
  AND in_range(race_ts, $since, $until)
  AND request IN (SELECT request FROM hedge_attempts WHERE NOT probe AND host IN (SELECT unnest($hosts)));
