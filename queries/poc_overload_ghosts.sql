-- poc_overload_ghosts: the ghost nonces (nonces burned without a request) the gateway
-- logged between $since and $until, per escrow, slot host, reason and dispatch phase,
-- from its nonce_disposition lines (disposition=ghost; they carry escrow and host).
-- The window is [$since, $until], both ends in (views/in_cpoc_window.sql).
-- Reads: log_nonce_dispositions.
SELECT escrow, participant, coalesce(no_send_reason, detail_reason, '') AS reason,
       coalesce(dispatch_phase, '') AS dispatch_phase, count(*) AS ghosts,
       min(ts) AS first_ts, max(ts) AS last_ts
FROM log_nonce_dispositions
WHERE disposition = 'ghost' AND escrow IS NOT NULL AND in_cpoc_window(ts, $since, $until)
GROUP BY ALL
ORDER BY escrow, participant, reason, dispatch_phase;
