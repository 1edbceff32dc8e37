-- Ghost nonces burned by the picker (session_picker_ghost_probe: no request, no escrow).
-- escrow is attributed from a nonce_disposition line with disposition=ghost for the same
-- nonce within 120 s when exactly one escrow matches (escrow_candidates says how many did).
-- Reads: log_ghost_probes, log_nonce_dispositions.
CREATE OR REPLACE VIEW log_ghosts AS
WITH d AS (
    SELECT escrow, nonce, ts FROM log_nonce_dispositions
    WHERE disposition = 'ghost' AND escrow IS NOT NULL
), m AS (
    SELECT g.file_id, g.line_no, count(DISTINCT d.escrow) AS n, min(d.escrow) AS escrow
    FROM log_ghost_probes g
    JOIN d ON d.nonce = g.nonce AND d.ts BETWEEN g.ts - INTERVAL 120 SECOND AND g.ts + INTERVAL 120 SECOND
    GROUP BY g.file_id, g.line_no
)
SELECT
    g.file_id, g.line_no, g.ts, g.nonce, g.reason, g.host_idx, g.queue_depth, g.no_send, g.participant, g.model,
    CASE WHEN m.n = 1 THEN m.escrow END AS escrow,
    coalesce(m.n, 0) AS escrow_candidates
FROM log_ghost_probes g LEFT JOIN m ON m.file_id = g.file_id AND m.line_no = g.line_no;
