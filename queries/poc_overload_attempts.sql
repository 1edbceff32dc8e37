-- poc_overload_attempts: every real attempt (race_completed, probes excluded) the gateway
-- logs show running between $since and $until, with its start (end minus attempt_ms), its
-- end, the full host address (race_completed participant=, else the host label resolved
-- through log_host_labels), and how the gateway classified its nonce (the last
-- nonce_disposition of the same escrow and nonce: disposition, dispatch phase, timeout
-- outcome), and what that makes of it (kind, miss: the miss rule, views/nonce_miss.sql; an
-- attempt without a disposition by unclassified_miss, $have_dispositions saying whether the
-- logs have any nonce_disposition line).
-- Running between: overlaps_cpoc_window (views/in_cpoc_window.sql), both ends in.
-- Reads: attempts, log_nonce_dispositions, log_host_labels.
WITH a AS (
    SELECT * FROM (SELECT a.*, a.ts - to_milliseconds(coalesce(a.attempt_ms, 0)) AS start_ts
                   FROM attempts a
                   WHERE NOT a.probe AND a.ts IS NOT NULL)
    WHERE overlaps_cpoc_window(start_ts, ts, $since, $until)
), d AS (
    -- the dispositions of those attempts' nonces only: the work follows the window, not the day
    SELECT n.escrow, n.nonce,
           last(n.disposition ORDER BY n.file_id, n.line_no)       AS disposition,
           last(n.dispatch_phase ORDER BY n.file_id, n.line_no)    AS dispatch_phase,
           last(n.timeout_outcome ORDER BY n.file_id, n.line_no)   AS timeout_outcome,
           last(n.detail_reason ORDER BY n.file_id, n.line_no)     AS detail_reason
    FROM log_nonce_dispositions n
    SEMI JOIN a ON a.escrow = n.escrow AND a.nonce = n.nonce
    GROUP BY n.escrow, n.nonce
)
SELECT a.file_id, a.line_no, a.request, a.escrow, a.nonce,
       coalesce(nullif(a.participant, ''), l.address) AS participant,
       a.host AS host_label,
       a.model,
       a.start_ts, a.ts AS end_ts, a.attempt_ms IS NOT NULL AS has_duration,
       a.finished, a.has_receipt, a.failure_reason,
       d.disposition, d.dispatch_phase, d.timeout_outcome, d.detail_reason,
       k.kind, is_miss(k.kind) AS miss
FROM a
LEFT JOIN d ON d.escrow = a.escrow AND d.nonce = a.nonce
LEFT JOIN log_host_labels l ON l.label = a.host AND l.status = 'resolved'
CROSS JOIN LATERAL (SELECT CASE WHEN d.disposition IS NOT NULL THEN nonce_miss(d.disposition, d.timeout_outcome, true)
                                ELSE unclassified_miss(a.finished, a.has_receipt, $have_dispositions) END AS kind) k
ORDER BY a.start_ts, a.file_id, a.line_no;
