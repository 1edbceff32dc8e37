-- poc_overload_attempts: every real attempt (race_completed, probes excluded) the gateway
-- logs show running between $since and $until, with its start (end minus attempt_ms), its
-- end, the full host address (race_completed participant=, else the host label resolved
-- through log_host_labels), and how the gateway classified its nonce (the last
-- nonce_disposition of the same escrow and nonce: disposition, dispatch phase, timeout
-- outcome). A miss is an unfinished_* disposition whose timeout was applied.
-- Reads: attempts, log_nonce_dispositions, log_host_labels.
WITH d AS (
    SELECT escrow, nonce,
           last(disposition ORDER BY file_id, line_no)       AS disposition,
           last(dispatch_phase ORDER BY file_id, line_no)    AS dispatch_phase,
           last(timeout_outcome ORDER BY file_id, line_no)   AS timeout_outcome,
           last(detail_reason ORDER BY file_id, line_no)     AS detail_reason
    FROM log_nonce_dispositions WHERE escrow IS NOT NULL GROUP BY escrow, nonce
), a AS (
    SELECT a.*, a.ts - to_milliseconds(coalesce(a.attempt_ms, 0)) AS start_ts
    FROM attempts a
    WHERE NOT a.probe AND a.ts IS NOT NULL
)
SELECT a.file_id, a.line_no, a.request, a.escrow, a.nonce,
       coalesce(nullif(a.participant, ''), l.address) AS participant,
       a.host AS host_label,
       a.model,
       a.start_ts, a.ts AS end_ts, a.attempt_ms IS NOT NULL AS has_duration,
       a.finished, a.has_receipt, a.failure_reason,
       d.disposition, d.dispatch_phase, d.timeout_outcome, d.detail_reason
FROM a
LEFT JOIN d ON d.escrow = a.escrow AND d.nonce = a.nonce
LEFT JOIN log_host_labels l ON l.label = a.host AND l.status = 'resolved'
WHERE a.ts >= $since AND a.start_ts <= $until
ORDER BY a.start_ts, a.file_id, a.line_no;
