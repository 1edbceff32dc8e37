-- hedge_races: one row per race (definitions in views/hedge_attempts.sql): its decision,
-- primary, winner, whether the hedge rescued the primary, and the work its losers threw away.
-- hedged: at least one secondary attempt ran. primary_won: the primary's attempt is the
-- winner; primary_lost: another attempt won.
-- The primary's facts are its race's primary row (views/race_primary.sql).
-- Reads: hedge_attempts.
CREATE OR REPLACE VIEW hedge_races AS
SELECT
    request,
    any_value(escrow) AS escrow,
    any_value(model) AS model,
    any_value(race_ts) AS race_ts,
    any_value(decision) AS decision,
    any_value(delay_ms) AS delay_ms,
    any_value(primary_nonce) AS primary_nonce,
    bool_or(primary_inferred) AS primary_inferred,
    race_primary(host, role, end_pos) AS primary_host,
    count(*) FILTER (WHERE NOT probe) AS attempts,
    count(*) FILTER (WHERE role = 'secondary') AS secondaries,
    count(*) FILTER (WHERE role = 'secondary') > 0 AS hedged,
    bool_or(winner AND NOT probe) AS has_winner,
    any_value(winner_nonce) AS winner_nonce,
    any_value(winner_host) AS winner_host,
    any_value(winner_role) AS winner_role,
    any_value(winner_start_reason) AS winner_start_reason,
    coalesce(bool_or(winner AND role = 'primary'), false) AS primary_won,
    coalesce(any_value(winner_role) = 'secondary', false) AS primary_lost,
    coalesce(any_value(rescue), false) AS rescue,
    race_primary(finished, role, end_pos) AS primary_finished,
    race_primary(suppressed_loser, role, end_pos) AS primary_suppressed,
    race_primary(ttft_ms, role, end_pos) AS primary_ttft_ms,
    arg_min_null(ttft_ms, end_pos) FILTER (WHERE winner AND NOT probe) AS winner_ttft_ms,
    count(*) FILTER (WHERE suppressed_loser) AS suppressed_losers,
    count(*) FILTER (WHERE wasted) AS wasted_attempts,
    sum(wasted_ms) FILTER (WHERE wasted) AS wasted_ms,
    sum(output_chunks) FILTER (WHERE wasted) AS wasted_chunks,
    sum(output_bytes) FILTER (WHERE wasted) AS wasted_bytes,
    sum(usage_tokens) FILTER (WHERE wasted) AS wasted_tokens,
    sum(attempt_ms) FILTER (WHERE NOT probe) AS attempt_ms,
    -- the durations the hedging figures sum (hedge_attempts.duration_ms: #1935)
    sum(duration_ms) FILTER (WHERE NOT probe) AS duration_ms,
    sum(output_bytes) FILTER (WHERE NOT probe) AS output_bytes,
    sum(usage_tokens) FILTER (WHERE NOT probe) AS usage_tokens
FROM hedge_attempts
WHERE role <> 'probe' OR role IS NULL
GROUP BY request
HAVING count(*) FILTER (WHERE NOT probe) > 0;
