-- log_escalations: the lines that start a request's secondary attempt (gateway-logs.md 4.2),
-- with the reason views/hedge_attempts.sql gives it: secondary_immediate_start -> its
-- decision field ('=decision' on the inference-level line, which has none: the request's
-- decision then), receipt_timeout_wait_elapsed -> receipt_timeout,
-- first_token_timeout_wait_elapsed -> first_token_timeout, attempt_failed,
-- suspicious_host_immediate_escalation -> suspicious_host, poc_probe_immediate_escalation ->
-- poc_probe, phase_transition_retry -> phase_transition_aborted.
--   pos   file_id x 10^12 + line_no: line order across files
--   ts    the line's time (auditor prune drops the lines before a time from every line table)
SELECT request, file_id::BIGINT * 1000000000000 + line_no AS pos, ts,
       CASE name
           WHEN 'secondary_immediate_start' THEN coalesce(fields->>'decision', '=decision')
           WHEN 'receipt_timeout_wait_elapsed' THEN 'receipt_timeout'
           WHEN 'first_token_timeout_wait_elapsed' THEN 'first_token_timeout'
           WHEN 'attempt_failed' THEN 'attempt_failed'
           WHEN 'suspicious_host_immediate_escalation' THEN 'suspicious_host'
           WHEN 'poc_probe_immediate_escalation' THEN 'poc_probe'
           WHEN 'phase_transition_retry' THEN 'phase_transition_aborted' END AS reason
FROM log_events
WHERE kind = 'stage' AND request IS NOT NULL
  AND name IN ('secondary_immediate_start', 'receipt_timeout_wait_elapsed', 'first_token_timeout_wait_elapsed',
               'attempt_failed', 'suspicious_host_immediate_escalation', 'poc_probe_immediate_escalation',
               'phase_transition_retry')
