-- log_request_lines: the fields views/log_requests.sql and remints_requests read from a
-- request's lines, typed: the model, body size and stream flag of its admission lines, the
-- winner and outcome of its settlement lines, the error of its failure lines, and the
-- max_tokens of any line that logs one (not a PoC probe's: gateway-logs.md 4.1). Lines of
-- other stages, and lines without request=, are not here.
--   pos   file_id x 10^12 + line_no: line order across files
SELECT file_id, line_no, ts, name, request,
       file_id::BIGINT * 1000000000000 + line_no AS pos,
       v[1] AS model,
       TRY_CAST(v[2] AS BIGINT) AS input_tokens,
       TRY_CAST(v[3] AS BOOLEAN) AS stream,
       TRY_CAST(v[4] AS BIGINT) AS winner_nonce,
       v[5] AS outcome,
       v[6] AS error,
       CASE WHEN name <> 'poc_probe_prepared' THEN TRY_CAST(v[7] AS BIGINT) END AS max_tokens,
       name <> 'poc_probe_prepared' AND v[7] IS NOT NULL AS logs_max_tokens
FROM (SELECT *, json_extract_string(fields,
          ['model', 'input_tokens', 'stream', 'winner_nonce', 'outcome', 'error', 'max_tokens']) AS v
      FROM log_events
      WHERE request IS NOT NULL
        AND (name IN ('gateway_request_received', 'proxy_request_started', 'runner_started',
                      'request_succeeded', 'request_fully_settled',
                      'request_failed', 'proxy_stream_failed', 'runner_prepare_failed')
             -- "max_tokens" in the record's text: a cheap test that spares the other lines a parse
             OR CAST(fields AS VARCHAR) LIKE '%"max_tokens"%'))
WHERE name IN ('gateway_request_received', 'proxy_request_started', 'runner_started',
               'request_succeeded', 'request_fully_settled',
               'request_failed', 'proxy_stream_failed', 'runner_prepare_failed')
   OR v[7] IS NOT NULL
