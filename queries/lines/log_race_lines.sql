-- log_race_lines: race_completed lines, one per attempt (probes and lines without request=
-- included), with their fields typed. views/attempts.sql builds the attempt from them.
--   end_pos    file_id x 10^12 + line_no: line order across files
--   stalls     a JSON array, as logged
SELECT file_id, line_no, ts, request, escrow, nonce, host,
       file_id::BIGINT * 1000000000000 + line_no AS end_pos,
       v[1] AS participant, v[2] AS model, TRY_CAST(v[3] AS BIGINT) AS input_bytes,
       TRY_CAST(v[4] AS BOOLEAN) AS winner, TRY_CAST(v[5] AS BOOLEAN) AS finished,
       TRY_CAST(v[6] AS BOOLEAN) AS responsive, TRY_CAST(v[7] AS BOOLEAN) AS has_receipt,
       TRY_CAST(v[8] AS BIGINT) AS attempt_ms, TRY_CAST(v[9] AS BIGINT) AS output_chunks,
       TRY_CAST(v[10] AS BIGINT) AS content_chunks, TRY_CAST(v[11] AS BIGINT) AS output_bytes,
       TRY_CAST(v[12] AS BIGINT) AS usage_tokens,
       coalesce(TRY_CAST(v[13] AS BOOLEAN), false) AS probe,
       coalesce(TRY_CAST(v[14] AS BOOLEAN), false) AS suspicious,
       v[15] AS failure_reason, TRY_CAST(v[16] AS INTEGER) AS stall_count,
       TRY_CAST(v[17] AS BIGINT) AS max_gap_ms, TRY_CAST(v[18] AS INTEGER) AS host_idx,
       TRY_CAST(v[19] AS BIGINT) AS confirmed_at, TRY_CAST(v[20] AS BIGINT) AS stream_bytes_read,
       TRY_CAST(v[21] AS BIGINT) AS mean_gap_ms, nullif(v[22], '') AS content_source,
       nullif(v[23], '') AS error_source,
       v[24] AS stalls
FROM (SELECT *, json_extract_string(fields,
          ['participant', 'model', 'input_tokens', 'winner', 'finished', 'responsive', 'has_receipt',
           'attempt_ms', 'output_chunks', 'content_chunks', 'output_bytes', 'usage_tokens', 'probe',
           'suspicious', 'failure_reason', 'stall_count', 'max_gap_ms', 'host_idx', 'confirmed_at',
           'stream_bytes_read', 'mean_gap_ms', 'content_source', 'error_source', 'stalls']) AS v
      FROM log_events
      WHERE kind = 'stage' AND name = 'race_completed')
