-- nonce_disposition lines: the gateway's own classification of every nonce (accounting vocabulary).
CREATE OR REPLACE VIEW log_nonce_dispositions AS
SELECT
    file_id, line_no, ts, request, escrow, nonce,
    fields->>'disposition' AS disposition,
    nullif(fields->>'dispatch_phase', '') AS dispatch_phase,
    nullif(fields->>'timeout_evaluation_phase', '') AS timeout_evaluation_phase,
    nullif(fields->>'quarantine_mode', '') AS quarantine_mode,
    nullif(fields->>'no_send_reason', '') AS no_send_reason,
    nullif(fields->>'failure_origin', '') AS failure_origin,
    nullif(fields->>'timeout_kind', '') AS timeout_kind,
    nullif(fields->>'timeout_outcome', '') AS timeout_outcome,
    nullif(fields->>'timeout_reason', '') AS timeout_reason,
    nullif(fields->>'detail_reason', '') AS detail_reason,
    fields->>'participant' AS participant,
    fields->>'model' AS model,
    TRY_CAST(fields->>'lag_ms' AS BIGINT) AS lag_ms
FROM log_events
WHERE kind = 'stage' AND name = 'nonce_disposition';
