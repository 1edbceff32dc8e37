-- nonce_disposition lines: the gateway's own classification of every nonce (accounting vocabulary).
-- (Every line table reads its fields with one json_extract_string of a list of keys: the
-- record is parsed once, not once per key.)
SELECT
    file_id, line_no, ts, request, escrow, nonce,
    v[1] AS disposition,
    nullif(v[2], '') AS dispatch_phase,
    nullif(v[3], '') AS timeout_evaluation_phase,
    nullif(v[4], '') AS quarantine_mode,
    nullif(v[5], '') AS no_send_reason,
    nullif(v[6], '') AS failure_origin,
    nullif(v[7], '') AS timeout_kind,
    nullif(v[8], '') AS timeout_outcome,
    nullif(v[9], '') AS timeout_reason,
    nullif(v[10], '') AS detail_reason,
    v[11] AS participant,
    v[12] AS model,
    TRY_CAST(v[13] AS BIGINT) AS lag_ms
FROM (SELECT *, json_extract_string(fields,
          ['disposition', 'dispatch_phase', 'timeout_evaluation_phase', 'quarantine_mode', 'no_send_reason',
           'failure_origin', 'timeout_kind', 'timeout_outcome', 'timeout_reason', 'detail_reason', 'participant',
           'model', 'lag_ms']) AS v
      FROM log_events
      WHERE kind = 'stage' AND name = 'nonce_disposition')
