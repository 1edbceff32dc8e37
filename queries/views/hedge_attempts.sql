-- hedge_attempts: every attempt of every race, with its role, why it was started, its
-- timings and, for a loser, the work that was thrown away (issue 9, `auditor hedging`).
--
-- Definitions (the same in every log format: only fields and line order are used, and a
-- line's time only where a duration has no field of its own). The attempt, its race, the
-- primary, cancelled, loser, suppressed loser (a loser whose nonce finished: the gateway's
-- visibility=suppressed_loser) and failed_after_suppression (a loser whose stream was
-- suppressed and which then failed, stalled or sse_truncated: the gateway's
-- failed_not_finished) are those of views/attempts.sql (one rule each); this view adds:
--   race       a user request dispatched to devshard hosts: a request with at least one
--              non-probe attempt. Cache hits never reach a host and are not races.
--   start_reason  'primary' for the primary; for a secondary the escalation line that
--              precedes its first line (prepared/started) in the request:
--              secondary_immediate_start -> the decision, receipt_timeout_wait_elapsed ->
--              receipt_timeout, first_token_timeout_wait_elapsed -> first_token_timeout,
--              attempt_failed, suspicious_host_immediate_escalation -> suspicious_host,
--              poc_probe_immediate_escalation -> poc_probe, phase_transition_retry ->
--              phase_transition_aborted (gateway-logs.md 4.2); NULL when none was read.
--   winner     the attempt with race_completed winner=true. The primary wins the race
--              when its attempt is the winner.
--   rescue     a race whose winner is a secondary and whose primary failed on its own
--              before the winner suppressed it (finished=false, not cancelled, not
--              failed_after_suppression) or whose winning secondary was started by a
--              stall escalation (receipt_timeout, first_token_timeout, attempt_failed,
--              suspicious_host, phase_transition_aborted): the hedge did useful work.
--   wasted work of a loser that is not in a rescue: its time after the winner was
--              selected (its race_completed time minus the winner's winner_selected time,
--              else the winner's first_token time), its output chunks and bytes and its
--              usage tokens (all of a loser's output is discarded: content before a winner
--              exists would have made it the winner). In a rescue race the losers' work is
--              not counted as waste (rescue_*). A failed_after_suppression loser's work is
--              waste too, up to its end (its race_completed line).
--   wasted_ms  precision is the lines' time precision: 1 s under the plain Go prefix
--              (see hedging_totals.time_resolution).
--   ttft_ms    started -> first_token (line times); receipt_ms is receipt_received's
--              elapsed_ms field.
--   duration   (#1935: gateway v5.1.0, fixed in v4.1.3, measured race_completed's attempt_ms, and
--              logged the line, when the whole request settled, not when the attempt ended: a
--              loser that ended first looks slower.) stage_ms is the attempt's own lines' span,
--              started -> end_stage_ts (its stream's end: send_completed, send_failed, empty_stream,
--              error_stream). attempt_ms_disagrees: both are known and differ by more than 1 s
--              (more than the lines' whole-second resolution can explain). duration_ms, the
--              duration every hedging figure sums: stage_ms where attempt_ms disagrees, else
--              attempt_ms. Likewise a loser's end, for wasted_ms, is its end_stage_ts where its
--              race_completed line came more than 1 s after it (end_from_stage_line), else the
--              race_completed line's time.
-- A race's winner is its first such attempt by line (end_pos): one race line stored twice (a
-- copy of it collected beside its log) gives two, and the pick must not depend on the order a
-- plan reads them. Its primary's failure is its primary row's (views/race_primary.sql), the
-- row the views of races and of requests read too.
-- end_pos (views/attempts.sql: file_id x 10^12 + line_no of the race_completed line) is kept
-- for the readers that order a race's attempts by line.
-- Reads: attempts, log_escalations.
CREATE OR REPLACE VIEW hedge_attempts AS
WITH att AS NOT MATERIALIZED (   -- read twice: kept, attempts is a table, and a copy of it costs more
    SELECT * REPLACE (coalesce(winner, false) AS winner, coalesce(finished, false) AS finished,
                      nullif(failure_reason, '') AS failure_reason)
    FROM attempts
    WHERE request IS NOT NULL
), trig AS (
    SELECT request, pos, reason FROM log_escalations
), secondary_reasons AS (
    -- why each secondary was started: the escalation line before its first line
    SELECT r.file_id, r.line_no,
           CASE WHEN t.reason = '=decision' THEN r.decision ELSE t.reason END AS start_reason
    FROM (SELECT * FROM att WHERE role = 'secondary') r
    ASOF LEFT JOIN trig t ON t.request = r.request AND coalesce(r.start_pos, r.end_pos) > t.pos
), reasons AS (
    SELECT r.*, CASE WHEN r.role = 'primary' THEN 'primary' ELSE s.start_reason END AS start_reason
    FROM att r
    LEFT JOIN secondary_reasons s ON s.file_id = r.file_id AND s.line_no = r.line_no
), race_facts AS (
    SELECT request,
           count(*) FILTER (WHERE NOT probe) AS race_attempts,
           arg_min_null(nonce, end_pos) FILTER (WHERE winner AND NOT probe) AS winner_nonce,
           arg_min_null(host, end_pos) FILTER (WHERE winner AND NOT probe) AS winner_host,
           arg_min_null(role, end_pos) FILTER (WHERE winner AND NOT probe) AS winner_role,
           arg_min_null(start_reason, end_pos) FILTER (WHERE winner AND NOT probe) AS winner_start_reason,
           arg_min_null(coalesce(winner_selected_ts, first_token_ts), end_pos) FILTER (WHERE winner AND NOT probe)
               AS race_winner_selected_ts,
           race_primary(NOT finished AND NOT cancelled AND NOT failed_after_suppression, role, end_pos)
               AS primary_failed,
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
           CASE WHEN c.started_ts IS NOT NULL AND c.first_token_ts IS NOT NULL
                THEN epoch_ms(c.first_token_ts) - epoch_ms(c.started_ts) END AS ttft_ms,
           CASE WHEN c.loser AND c.race_winner_selected_ts IS NOT NULL AND c.ts IS NOT NULL
                THEN greatest(0, epoch_ms(CASE WHEN c.end_from_stage_line THEN c.end_stage_ts ELSE c.ts END)
                                 - epoch_ms(c.race_winner_selected_ts)) END AS after_winner_ms
    FROM (SELECT r.*,
                 CASE WHEN r.started_ts IS NOT NULL AND r.end_stage_ts IS NOT NULL
                      THEN epoch_ms(r.end_stage_ts) - epoch_ms(r.started_ts) END AS stage_ms,
                 coalesce(epoch_ms(r.ts) - epoch_ms(r.end_stage_ts) > 1000, false) AS end_from_stage_line
          FROM race r) c
), timed AS (
    SELECT c.*, abs(c.attempt_ms - c.stage_ms) > 1000 AS attempt_ms_disagrees
    FROM classified c
)
SELECT request, escrow, nonce, host, participant, model, race_ts, decision, delay_ms,
       primary_nonce, primary_inferred, role, start_reason,
       winner, finished, responsive, has_receipt, probe, suspicious, failure_reason, cancelled,
       stream_suppressed,
       attempt_ms, stage_ms, attempt_ms_disagrees,
       CASE WHEN attempt_ms_disagrees THEN stage_ms ELSE attempt_ms END AS duration_ms,
       end_stage_ts, end_from_stage_line,
       output_chunks, content_chunks, output_bytes, usage_tokens, input_bytes, stall_count, max_gap_ms,
       receipt_ms, ttft_ms, started_ts, first_token_ts, ts AS end_ts,
       race_attempts, race_has_winner, winner_nonce, winner_host, winner_role, winner_start_reason, rescue,
       loser, suppressed_loser, failed_after_suppression,
       after_winner_ms,
       (loser AND NOT coalesce(rescue, false)) AS wasted,
       CASE WHEN loser AND NOT coalesce(rescue, false) THEN after_winner_ms END AS wasted_ms,
       file_id, line_no, end_pos
FROM timed;
