-- hedge_attempts: every attempt of every race, with its role, why it was started, its
-- timings and, for a loser, the work that was thrown away (issue 9, `auditor hedging`).
--
-- Definitions (the same in every log format: only fields and line order are used, and a
-- line's time only where a duration has no field of its own):
--   race       a user request dispatched to devshard hosts: a request with at least one
--              non-probe attempt (a race_completed line). Cache hits never reach a host
--              and are not races. PoC probes (probe=true) are not attempts of the race.
--   primary    the attempt whose nonce was assigned first: the nonce on the request's
--              decision_made line; when no decision_made was read (the log starts inside
--              the request), the request's lowest non-probe nonce (nonces are assigned in
--              order per escrow). Every other attempt is a secondary.
--   start_reason  'primary' for the primary; for a secondary the escalation line that
--              precedes its first line (prepared/started) in the request:
--              secondary_immediate_start -> the decision, receipt_timeout_wait_elapsed ->
--              receipt_timeout, first_token_timeout_wait_elapsed -> first_token_timeout,
--              attempt_failed, suspicious_host_immediate_escalation -> suspicious_host,
--              poc_probe_immediate_escalation -> poc_probe, phase_transition_retry ->
--              phase_transition_aborted (gateway-logs.md 4.2); NULL when none was read.
--   winner     the attempt with race_completed winner=true. The primary wins the race
--              when its attempt is the winner.
--   cancelled  the gateway ended the attempt (speculative_attempt_canceled, or
--              failure_reason=client_cancelled): it did not run to its own end.
--   suppressed loser  a non-probe attempt that is not the winner of a race that has one,
--              whose stream was suppressed because the other attempt won (a
--              stream_suppressed line, or finished=true: a non-winner can only finish
--              after the winner existed), and which then ran on
--              to completion (finished=true) or to its own end (not cancelled).
--   rescue     a race whose winner is a secondary and whose primary failed on its own
--              (finished=false, not cancelled) or whose winning secondary was started by a
--              stall escalation (receipt_timeout, first_token_timeout, attempt_failed,
--              suspicious_host, phase_transition_aborted): the hedge did useful work.
--   wasted work of a loser (a non-probe non-winner of a race that has a winner and is not
--              a rescue): its time after the winner was selected (its race_completed
--              time minus the winner's winner_selected time, else the winner's first_token
--              time), its output chunks and bytes and its usage tokens (all of a loser's
--              output is discarded: content before a winner exists would have made it the
--              winner). In a rescue race the losers' work is not counted as waste (rescue_*).
--   wasted_ms  precision is the lines' time precision: 1 s under the plain Go prefix
--              (see hedging_totals.time_resolution).
--   ttft_ms    started -> first_token (line times); receipt_ms is receipt_received's
--              elapsed_ms field.
-- Reads: log_events (race_completed, decision_made and the attempt stages; the same lines
-- log_attempts and log_hedge_decisions read, each JSON record parsed once for speed).
CREATE OR REPLACE VIEW hedge_attempts AS
WITH ev AS MATERIALIZED (
    -- one scan of log_events for every line the definitions read, and one JSON parse of
    -- each line that carries fields they use (the fields column is most of the store:
    -- reading it once instead of once per line kind is most of this view's speed)
    SELECT file_id, line_no, ts, name, request, escrow, nonce, host,
           file_id::BIGINT * 1000000000000 + line_no AS pos,
           CASE name
               WHEN 'race_completed' THEN json_extract_string(fields,
                   ['participant', 'model', 'input_tokens', 'winner', 'finished', 'responsive', 'has_receipt',
                    'attempt_ms', 'output_chunks', 'content_chunks', 'output_bytes', 'usage_tokens', 'probe',
                    'suspicious', 'failure_reason', 'stall_count', 'max_gap_ms'])
               WHEN 'decision_made' THEN json_extract_string(fields, ['decision', 'delay_ms'])
               WHEN 'receipt_received' THEN [fields->>'elapsed_ms']
               WHEN 'secondary_immediate_start' THEN [fields->>'decision'] END AS v
    FROM log_events
    WHERE kind = 'stage'
      AND name IN ('race_completed', 'decision_made', 'receipt_received',
                   'prepared', 'poc_probe_prepared', 'started', 'first_token', 'winner_selected',
                   'speculative_attempt_canceled', 'stream_suppressed',
                   'secondary_immediate_start', 'receipt_timeout_wait_elapsed', 'first_token_timeout_wait_elapsed',
                   'attempt_failed', 'suspicious_host_immediate_escalation', 'poc_probe_immediate_escalation',
                   'phase_transition_retry')
), att AS (
    -- the fields of race_completed, one line per attempt
    SELECT file_id, line_no, ts, request, escrow, nonce, host, pos AS end_pos,
           v[1] AS participant, v[2] AS model, TRY_CAST(v[3] AS BIGINT) AS input_bytes,
           coalesce(TRY_CAST(v[4] AS BOOLEAN), false) AS winner,       -- a line without the key: not the winner
           coalesce(TRY_CAST(v[5] AS BOOLEAN), false) AS finished,
           TRY_CAST(v[6] AS BOOLEAN) AS responsive, TRY_CAST(v[7] AS BOOLEAN) AS has_receipt,
           TRY_CAST(v[8] AS BIGINT) AS attempt_ms, TRY_CAST(v[9] AS BIGINT) AS output_chunks,
           TRY_CAST(v[10] AS BIGINT) AS content_chunks, TRY_CAST(v[11] AS BIGINT) AS output_bytes,
           TRY_CAST(v[12] AS BIGINT) AS usage_tokens,
           coalesce(TRY_CAST(v[13] AS BOOLEAN), false) AS probe,
           coalesce(TRY_CAST(v[14] AS BOOLEAN), false) AS suspicious,
           nullif(v[15], '') AS failure_reason, TRY_CAST(v[16] AS INTEGER) AS stall_count,
           TRY_CAST(v[17] AS BIGINT) AS max_gap_ms
    FROM ev
    WHERE name = 'race_completed' AND request IS NOT NULL
), per_nonce AS (
    SELECT escrow, nonce,
           min(pos) FILTER (WHERE name IN ('prepared', 'poc_probe_prepared', 'started')) AS start_pos,
           min(ts) FILTER (WHERE name = 'started') AS started_ts,
           min(ts) FILTER (WHERE name = 'first_token') AS first_token_ts,
           min(ts) FILTER (WHERE name = 'winner_selected') AS winner_selected_ts,
           bool_or(name = 'speculative_attempt_canceled') AS canceled_line,
           bool_or(name = 'stream_suppressed') AS stream_suppressed,
           min(TRY_CAST(v[1] AS BIGINT)) FILTER (WHERE name = 'receipt_received') AS receipt_ms
    FROM ev
    WHERE nonce IS NOT NULL AND escrow IS NOT NULL
      AND name IN ('prepared', 'poc_probe_prepared', 'started', 'first_token', 'winner_selected',
                   'speculative_attempt_canceled', 'stream_suppressed', 'receipt_received')
    GROUP BY escrow, nonce
), trig AS (
    SELECT request, pos,
           CASE name
               WHEN 'secondary_immediate_start' THEN coalesce(v[1], '=decision')  -- the inference-level line has none
               WHEN 'receipt_timeout_wait_elapsed' THEN 'receipt_timeout'
               WHEN 'first_token_timeout_wait_elapsed' THEN 'first_token_timeout'
               WHEN 'attempt_failed' THEN 'attempt_failed'
               WHEN 'suspicious_host_immediate_escalation' THEN 'suspicious_host'
               WHEN 'poc_probe_immediate_escalation' THEN 'poc_probe'
               WHEN 'phase_transition_retry' THEN 'phase_transition_aborted' END AS reason
    FROM ev
    WHERE request IS NOT NULL
      AND name IN ('secondary_immediate_start', 'receipt_timeout_wait_elapsed', 'first_token_timeout_wait_elapsed',
                   'attempt_failed', 'suspicious_host_immediate_escalation', 'poc_probe_immediate_escalation',
                   'phase_transition_retry')
), dec AS (
    SELECT request, arg_min(nonce, pos) AS decision_nonce, arg_min(v[1], pos) AS decision,
           arg_min(ts, pos) AS decision_ts, arg_min(TRY_CAST(v[2] AS BIGINT), pos) AS delay_ms
    FROM ev WHERE name = 'decision_made' AND request IS NOT NULL
    GROUP BY request
), lowest AS (
    SELECT request, min(nonce) AS lowest_nonce FROM att WHERE NOT probe GROUP BY request
), joined AS (
    SELECT a.*, n.start_pos, n.started_ts, n.first_token_ts, n.winner_selected_ts,
           coalesce(n.stream_suppressed, false) AS stream_suppressed, n.receipt_ms,
           coalesce(n.canceled_line, false) OR coalesce(a.failure_reason = 'client_cancelled', false) AS cancelled,
           d.decision_nonce, d.decision AS race_decision, d.decision_ts, d.delay_ms, lo.lowest_nonce
    FROM att a
    LEFT JOIN per_nonce n ON n.escrow = a.escrow AND n.nonce = a.nonce
    LEFT JOIN dec d ON d.request = a.request
    LEFT JOIN lowest lo ON lo.request = a.request
), roles AS (
    SELECT j.*,
           coalesce(j.decision_nonce, j.lowest_nonce) AS race_primary_nonce,
           j.decision_nonce IS NULL AS primary_inferred,
           CASE WHEN j.probe THEN 'probe'
                WHEN j.nonce = coalesce(j.decision_nonce, j.lowest_nonce) THEN 'primary'
                ELSE 'secondary' END AS race_role
    FROM joined j
), secondary_reasons AS (
    -- why each secondary was started: the escalation line before its first line
    SELECT r.file_id, r.line_no,
           CASE WHEN t.reason = '=decision' THEN r.race_decision ELSE t.reason END AS start_reason
    FROM (SELECT * FROM roles WHERE race_role = 'secondary') r
    ASOF LEFT JOIN trig t ON t.request = r.request AND coalesce(r.start_pos, r.end_pos) > t.pos
), reasons AS (
    SELECT r.*, CASE WHEN r.race_role = 'primary' THEN 'primary' ELSE s.start_reason END AS start_reason
    FROM roles r
    LEFT JOIN secondary_reasons s ON s.file_id = r.file_id AND s.line_no = r.line_no
), race_facts AS (
    SELECT request,
           count(*) FILTER (WHERE NOT probe) AS race_attempts,
           coalesce(bool_or(winner AND NOT probe), false) AS race_has_winner,
           first(nonce) FILTER (WHERE winner AND NOT probe) AS winner_nonce,
           first(host) FILTER (WHERE winner AND NOT probe) AS winner_host,
           first(race_role) FILTER (WHERE winner AND NOT probe) AS winner_role,
           first(start_reason) FILTER (WHERE winner AND NOT probe) AS winner_start_reason,
           first(coalesce(winner_selected_ts, first_token_ts)) FILTER (WHERE winner AND NOT probe)
               AS race_winner_selected_ts,
           first(NOT finished AND NOT cancelled) FILTER (WHERE race_role = 'primary') AS primary_failed,
           min(started_ts) AS race_started_ts
    FROM reasons GROUP BY request
), race AS (
    SELECT x.*, f.* EXCLUDE (request)
    FROM reasons x JOIN race_facts f ON f.request = x.request
), classified AS (
    SELECT c.*,
           coalesce(c.decision_ts, c.race_started_ts, c.ts) AS race_ts,
           (c.winner_role = 'secondary' AND (coalesce(c.primary_failed, false) OR c.winner_start_reason IN
               ('receipt_timeout', 'first_token_timeout', 'attempt_failed', 'suspicious_host',
                'phase_transition_aborted'))) AS rescue,
           (NOT c.probe AND NOT c.winner AND c.race_has_winner) AS loser,
           (NOT c.probe AND NOT c.winner AND c.race_has_winner AND NOT c.cancelled
            AND (c.finished OR c.stream_suppressed)) AS is_suppressed_loser,
           CASE WHEN c.started_ts IS NOT NULL AND c.first_token_ts IS NOT NULL
                THEN epoch_ms(c.first_token_ts) - epoch_ms(c.started_ts) END AS ttft_ms,
           CASE WHEN NOT c.probe AND NOT c.winner AND c.race_has_winner AND c.race_winner_selected_ts IS NOT NULL
                 AND c.ts IS NOT NULL
                THEN greatest(0, epoch_ms(c.ts) - epoch_ms(c.race_winner_selected_ts)) END AS after_winner_ms
    FROM race c
)
SELECT request, escrow, nonce, host, participant, model, race_ts, race_decision AS decision, delay_ms,
       race_primary_nonce AS primary_nonce, primary_inferred, race_role AS role, start_reason,
       winner, finished, responsive, has_receipt, probe, suspicious, failure_reason, cancelled,
       stream_suppressed,
       attempt_ms, output_chunks, content_chunks, output_bytes, usage_tokens, input_bytes, stall_count, max_gap_ms,
       receipt_ms, ttft_ms, started_ts, first_token_ts, ts AS end_ts,
       race_attempts, race_has_winner, winner_nonce, winner_host, winner_role, winner_start_reason, rescue,
       loser, is_suppressed_loser AS suppressed_loser,
       after_winner_ms,
       (loser AND NOT coalesce(rescue, false)) AS wasted,
       CASE WHEN loser AND NOT coalesce(rescue, false) THEN after_winner_ms END AS wasted_ms,
       file_id, line_no
FROM classified;
