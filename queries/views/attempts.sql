-- attempts: the one definition of an attempt, of a race's primary and of a suppressed loser.
-- Every other view and query that needs them projects from this one.
--
-- One row per attempt: a race_completed line (probes and lines without request= included),
-- with its fields, the request's decision and the attempt's own lines (first line, started,
-- receipt, first token, winner_selected, suppression, cancellation, and end_stage_ts: the first
-- of its send_completed, send_failed, empty_stream and error_stream lines, when the host's stream
-- ended). The same in every log format: only fields and line order are used.
--   race       the attempts of one request (request=). A line without a request belongs to
--              no race: its role, primary_nonce, race_has_winner, loser, suppressed_loser and
--              failed_after_suppression are NULL (unknown). PoC probes (probe=true) are not
--              attempts of the race.
--   primary    ONE RULE: the attempt whose nonce was assigned first. That is the nonce on
--              the request's first decision_made line; when no decision_made was read (the
--              log starts inside the request), the request's lowest non-probe nonce (nonces
--              are assigned in order per escrow), and primary_inferred is true. Per request,
--              whatever the escrow. Every other non-probe attempt is a secondary.
--   role       'probe' for a probe, else 'primary' or 'secondary' (NULL without a request).
--   winner, finished  as the line says; NULL when it does not say (the rules below read a
--              missing value as false).
--   cancelled  the gateway ended the attempt (speculative_attempt_canceled, or
--              failure_reason=client_cancelled): it did not run to its own end.
--   loser      a non-probe attempt that is not the winner of a race that has one.
--   suppressed loser  ONE RULE, the gateway's own (visibility=suppressed_loser,
--              gatewayAttemptVisibility; gateway-logs.md 4.4 and 13.3): a loser whose nonce
--              finished (race_completed finished=true): the host did the full work and it was
--              discarded. attempts_terminal_total{visibility="suppressed_loser"} counts the same
--              attempts (probes and races without a winner aside).
--   failed_after_suppression  a loser whose stream was suppressed because the other attempt
--              won (a stream_suppressed line) and which then failed on its own (finished=false,
--              not cancelled: stalled, sse_truncated, ...). Not a suppressed loser: the gateway
--              counts it visibility=failed_not_finished. Its work up to its end is still thrown
--              away: it is waste like any loser's.
--   start_pos, end_pos  file_id x 10^12 + line_no of the attempt's first line (prepared,
--              poc_probe_prepared or started) and of its race_completed line: line order
--              across files, for placing other lines (escalations) against the attempt.
-- Reads: log_race_lines, request_decisions (the first decision_made line), log_attempt_lines
-- (their fields typed once, at ingestion: queries/lines/).
CREATE OR REPLACE VIEW attempts AS
WITH att AS (
    -- the fields of race_completed, one line per attempt
    SELECT * FROM log_race_lines
), per_nonce AS (
    -- the attempt's own lines, by escrow and nonce
    SELECT escrow, nonce,
           min(pos) FILTER (WHERE name IN ('prepared', 'poc_probe_prepared', 'started')) AS start_pos,
           min(ts) FILTER (WHERE name = 'started') AS started_ts,
           min(ts) FILTER (WHERE name = 'first_token') AS first_token_ts,
           min(ts) FILTER (WHERE name = 'winner_selected') AS winner_selected_ts,
           bool_or(name = 'speculative_attempt_canceled') AS canceled_line,
           bool_or(name = 'stream_suppressed') AS stream_suppressed,
           min(elapsed_ms) FILTER (WHERE name = 'receipt_received') AS receipt_ms,
           min(ts) FILTER (WHERE name IN ('send_completed', 'send_failed', 'empty_stream', 'error_stream'))
               AS end_stage_ts
    FROM log_attempt_lines
    WHERE name IN ('prepared', 'poc_probe_prepared', 'started', 'first_token', 'winner_selected',
                   'speculative_attempt_canceled', 'stream_suppressed', 'receipt_received',
                   'send_completed', 'send_failed', 'empty_stream', 'error_stream')
    GROUP BY escrow, nonce
), dec AS (
    -- the request's decision: its first decision_made line (views/request_decisions.sql)
    SELECT request, decision_nonce, decision, decision_ts, delay_ms FROM request_decisions
), race AS (
    SELECT request, min(nonce) FILTER (WHERE NOT probe) AS lowest_nonce,
           coalesce(bool_or(coalesce(winner, false) AND NOT probe), false) AS race_has_winner
    FROM att WHERE request IS NOT NULL
    GROUP BY request
), joined AS (
    SELECT a.*, n.start_pos, n.started_ts, n.first_token_ts, n.winner_selected_ts, n.receipt_ms, n.end_stage_ts,
           coalesce(n.stream_suppressed, false) AS stream_suppressed,
           coalesce(n.canceled_line, false) OR coalesce(a.failure_reason = 'client_cancelled', false) AS cancelled,
           d.decision, d.decision_ts, d.delay_ms,
           CASE WHEN a.request IS NOT NULL THEN coalesce(d.decision_nonce, r.lowest_nonce) END AS primary_nonce,
           CASE WHEN a.request IS NOT NULL THEN d.decision_nonce IS NULL END AS primary_inferred,
           r.race_has_winner
    FROM att a
    LEFT JOIN per_nonce n ON n.escrow = a.escrow AND n.nonce = a.nonce
    LEFT JOIN dec d ON d.request = a.request
    LEFT JOIN race r ON r.request = a.request
), roles AS (
    SELECT j.*,
           CASE WHEN j.probe THEN 'probe'
                WHEN j.request IS NULL THEN NULL
                WHEN j.nonce = j.primary_nonce THEN 'primary'
                ELSE 'secondary' END AS role,
           CASE WHEN j.request IS NOT NULL
                THEN NOT j.probe AND NOT coalesce(j.winner, false) AND j.race_has_winner END AS loser
    FROM joined j
)
SELECT *,
       CASE WHEN loser IS NOT NULL THEN loser AND coalesce(finished, false) END AS suppressed_loser,
       CASE WHEN loser IS NOT NULL
            THEN loser AND NOT coalesce(finished, false) AND NOT cancelled AND stream_suppressed END
           AS failed_after_suppression
FROM roles;
