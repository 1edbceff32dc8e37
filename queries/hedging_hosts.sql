-- hedging_hosts: per host, its races as primary and its attempts as secondary, over the
-- races whose time (decision_made, else first attempt start) is in [$since, $until)
-- (NULL = unbounded). Definitions of race, primary, winner, suppressed loser, rescue and
-- wasted work: views/hedge_attempts.sql.
--   primary_races    races where the host held the primary (first-assigned) nonce
--   primary_wins     ... and its attempt was the winner
--   primary_losses   ... and another attempt (a secondary) won
--   primary_rescued  losses where the hedge rescued the primary (it failed on its own, or the
--                    winner was started by a stall escalation): useful hedges, not waste
--   primary_no_winner  races where no attempt won (all failed)
--   suppressed_losers  its primary attempts that finished as suppressed losers: losers whose
--                    nonce finished, as the gateway's visibility=suppressed_loser counts them
--                    (completed: the same count, kept for the JSON contract)
--   failed_after_suppression  its primary attempts suppressed by the winner that then failed
--                    (stalled, sse_truncated): the gateway's failed_not_finished, counted apart
--   secondary_*      its secondary attempts, their wins, suppressed losers and failures after
--                    suppression
--   wasted_*         work of its attempts (either role) thrown away outside rescue races;
--                    wasted_seconds is NULL when no wasted attempt's time is known (lines without
--                    times), and wasted_time_unknown counts the wasted attempts without one
-- host: the full address where log_host_labels resolves the label, else the label.
-- Reads: hedge_attempts, log_host_labels.
WITH a AS (
    SELECT * FROM hedge_attempts
    WHERE NOT probe
      AND in_range(race_ts, $since, $until)
), per AS (
    SELECT host AS label,
           count(*) FILTER (WHERE role = 'primary') AS primary_races,
           count(*) FILTER (WHERE role = 'primary' AND winner) AS primary_wins,
           count(*) FILTER (WHERE role = 'primary' AND winner_role = 'secondary') AS primary_losses,
           count(*) FILTER (WHERE role = 'primary' AND winner_role = 'secondary' AND rescue) AS primary_rescued,
           count(*) FILTER (WHERE role = 'primary' AND NOT race_has_winner) AS primary_no_winner,
           count(*) FILTER (WHERE role = 'primary' AND suppressed_loser) AS suppressed_losers,
           count(*) FILTER (WHERE role = 'primary' AND suppressed_loser AND finished) AS suppressed_losers_completed,
           count(*) FILTER (WHERE role = 'primary' AND suppressed_loser AND NOT rescue) AS suppressed_losers_wasted,
           count(*) FILTER (WHERE role = 'primary' AND failed_after_suppression) AS failed_after_suppression,
           count(*) FILTER (WHERE role = 'secondary') AS secondary_attempts,
           count(*) FILTER (WHERE role = 'secondary' AND winner) AS secondary_wins,
           count(*) FILTER (WHERE role = 'secondary' AND suppressed_loser) AS secondary_suppressed_losers,
           count(*) FILTER (WHERE role = 'secondary' AND failed_after_suppression)
               AS secondary_failed_after_suppression,
           count(*) FILTER (WHERE wasted) AS wasted_attempts,
           CASE WHEN count(*) FILTER (WHERE wasted) = 0 THEN 0
                ELSE round(sum(wasted_ms) FILTER (WHERE wasted) / 1000.0, 3) END AS wasted_seconds,
           count(*) FILTER (WHERE wasted AND wasted_ms IS NULL) AS wasted_time_unknown,
           coalesce(sum(output_chunks) FILTER (WHERE wasted), 0) AS wasted_chunks,
           coalesce(sum(output_bytes) FILTER (WHERE wasted), 0) AS wasted_bytes,
           sum(usage_tokens) FILTER (WHERE wasted) AS wasted_tokens,
           round(sum(duration_ms) / 1000.0, 3) AS attempt_seconds,    -- hedge_attempts.duration_ms (#1935)
           sum(output_bytes) AS output_bytes,
           min(participant) FILTER (WHERE length(participant) > 8) AS logged_address
    FROM a GROUP BY host
)
SELECT coalesce(l.address, p.logged_address, p.label) AS host, p.label,
       coalesce(l.status, CASE WHEN p.logged_address IS NOT NULL THEN 'resolved' ELSE 'unknown' END) AS label_status,
       p.* EXCLUDE (label, logged_address),
       CASE WHEN p.primary_races > 0 THEN round(p.primary_losses / p.primary_races, 4) END AS loss_rate
FROM per p
LEFT JOIN log_host_labels l ON l.label = p.label
ORDER BY p.primary_losses DESC, p.primary_races DESC, p.label;
