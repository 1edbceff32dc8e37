-- Ghost nonces burned by the picker (session_picker_ghost_probe: no request, no escrow).
-- escrow is attributed from a nonce_disposition line with disposition=ghost for the same
-- nonce within 120 s when exactly one escrow matches (escrow_candidates says how many did).
CREATE OR REPLACE VIEW log_ghosts AS
WITH g AS (
    SELECT file_id, line_no, ts, nonce, fields FROM log_events
    WHERE kind = 'stage' AND name = 'session_picker_ghost_probe'
), d AS (
    SELECT escrow, nonce, ts FROM log_events
    WHERE kind = 'stage' AND name = 'nonce_disposition' AND fields->>'disposition' = 'ghost' AND escrow IS NOT NULL
), m AS (
    SELECT g.file_id, g.line_no, count(DISTINCT d.escrow) AS n, min(d.escrow) AS escrow
    FROM g JOIN d ON d.nonce = g.nonce AND d.ts BETWEEN g.ts - INTERVAL 120 SECOND AND g.ts + INTERVAL 120 SECOND
    GROUP BY g.file_id, g.line_no
)
SELECT
    g.file_id, g.line_no, g.ts, g.nonce,
    g.fields->>'reason' AS reason,                 -- poc_unavailable_host | participant_throttled_no_send | ...
    TRY_CAST(g.fields->>'host_idx' AS INTEGER) AS host_idx,
    TRY_CAST(g.fields->>'queue_depth' AS INTEGER) AS queue_depth,
    coalesce(TRY_CAST(g.fields->>'no_send' AS BOOLEAN), false) AS no_send,
    g.fields->>'participant_key' AS participant,
    g.fields->>'model_id' AS model,
    CASE WHEN m.n = 1 THEN m.escrow END AS escrow,
    coalesce(m.n, 0) AS escrow_candidates
FROM g LEFT JOIN m ON m.file_id = g.file_id AND m.line_no = g.line_no;
