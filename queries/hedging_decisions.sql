-- hedging_decisions: per decision reason (decision_made `decision`), over races in
-- [$since, $until): how many races it decided, how many of them it started extra attempts
-- for (secondaries whose start_reason is the decision), how many of those races an extra
-- attempt won, and what share of its extra attempts were wasted (losers outside rescue
-- races, see views/hedge_attempts.sql), plus the primaries its extra attempts turned into
-- suppressed losers, and the work thrown away in the races it started (wasted_seconds,
-- wasted_bytes: every loser of those races outside rescues). Secondaries started by a later
-- escalation (attempt_failed, ...) are not extra attempts of the decision.
-- Reads: hedge_attempts.
WITH a AS (
    SELECT *, (role = 'secondary' AND start_reason = decision) AS extra
    FROM hedge_attempts
    WHERE NOT probe
      AND in_range(race_ts, $since, $until)
), r AS (
    SELECT request, any_value(decision) AS decision,
           bool_or(extra) AS started, bool_or(extra AND winner) AS extra_won,
           count(*) FILTER (WHERE extra) AS extra_attempts,
           count(*) FILTER (WHERE extra AND wasted) AS extra_wasted,
           count(*) FILTER (WHERE extra AND suppressed_loser) AS extra_suppressed,
           count(*) FILTER (WHERE extra AND NOT finished AND NOT cancelled) AS extra_failed,
           -- the race's primary row (views/race_primary.sql), as hedge_races.primary_suppressed
           bool_or(extra AND winner)
               AND race_primary(suppressed_loser, role, file_id::BIGINT * 1000000000000 + line_no) AS primary_suppressed,
           bool_or(rescue) AS rescue,
           count(*) FILTER (WHERE wasted) AS wasted_n,
           sum(wasted_ms) FILTER (WHERE wasted) AS wasted_ms,
           sum(output_bytes) FILTER (WHERE wasted) AS wasted_bytes
    FROM a GROUP BY request
)
SELECT coalesce(decision, '(no decision_made read)') AS decision,
       count(*) AS races,
       count(*) FILTER (WHERE started) AS races_started,
       count(*) FILTER (WHERE extra_won) AS extra_won,
       sum(extra_attempts) AS extra_attempts,
       sum(extra_wasted) AS extra_wasted,
       sum(extra_suppressed) AS extra_suppressed,
       sum(extra_failed) AS extra_failed,
       CASE WHEN sum(extra_attempts) > 0 THEN round(sum(extra_wasted) / sum(extra_attempts), 4) END AS extra_wasted_share,
       count(*) FILTER (WHERE primary_suppressed) AS primaries_suppressed,
       count(*) FILTER (WHERE started AND rescue) AS rescues,
       CASE WHEN coalesce(sum(wasted_n) FILTER (WHERE started), 0) = 0 THEN 0
            ELSE round(sum(wasted_ms) FILTER (WHERE started) / 1000.0, 3) END AS wasted_seconds,
       coalesce(sum(wasted_bytes) FILTER (WHERE started), 0) AS wasted_bytes
FROM r
GROUP BY 1
ORDER BY races_started DESC, races DESC, 1;
