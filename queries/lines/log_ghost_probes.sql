-- log_ghost_probes: session_picker_ghost_probe lines, the nonces the picker burned (no
-- request, no escrow), with their fields typed. views/log_ghosts.sql attributes their escrow.
SELECT file_id, line_no, ts, nonce,
       v[1] AS reason,                 -- poc_unavailable_host | participant_throttled_no_send | ...
       TRY_CAST(v[2] AS INTEGER) AS host_idx,
       TRY_CAST(v[3] AS INTEGER) AS queue_depth,
       coalesce(TRY_CAST(v[4] AS BOOLEAN), false) AS no_send,
       v[5] AS participant,
       v[6] AS model
FROM (SELECT *, json_extract_string(fields, ['reason', 'host_idx', 'queue_depth', 'no_send', 'participant_key', 'model_id']) AS v
      FROM log_events
      WHERE kind = 'stage' AND name = 'session_picker_ghost_probe')
