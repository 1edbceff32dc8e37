-- remints_requests: the requests on an escrow that the remints analysis shows one by one:
-- those that failed to reserve ("insufficient escrow balance": the trigger of a
-- request-path deactivation, and the failures of an escrow's life), and those logged
-- without a time (a pasted excerpt), which the analysis places by the order of their lines.
-- Every other request counts only in sums (remints_request_tallies.sql).
-- (gateway-logs.md 6.1: reservation = (input bytes + max_tokens) x token_price, per attempt,
-- since each attempt starts its own inference on its own nonce.)
--
-- Answers, per such request: its time, escrow, model, input bytes (the body length
-- proxy_request_started / runner_started log as input_tokens), the max_tokens a line of the
-- request logged (NULL: not logged, the usual case: the gateway then applied its default),
-- the attempts it ran (race_completed lines), its outcome, and whether it failed to reserve,
-- with the time of that failure.
-- Reads: log_requests, log_request_lines, log_escrow_events.
WITH shown AS (
    SELECT * FROM log_requests
    WHERE escrow IS NOT NULL AND (coalesce(insufficient_balance, false) OR first_ts IS NULL)
),
mt AS (
    SELECT request, first(max_tokens ORDER BY pos) AS max_tokens
    FROM log_request_lines
    WHERE logs_max_tokens AND request IN (SELECT request FROM shown)
    GROUP BY request
),
fail AS (
    SELECT request, min(ts) AS failed_at
    FROM log_escrow_events WHERE insufficient_balance GROUP BY request
)
SELECT r.request, r.first_ts AS ts, r.escrow, r.model, r.input_bytes, mt.max_tokens AS max_tokens_logged,
       r.attempts, r.outcome, coalesce(r.insufficient_balance, false) AS insufficient_balance,
       fail.failed_at, r.error
FROM shown r
LEFT JOIN mt USING (request)
LEFT JOIN fail USING (request)
ORDER BY r.escrow, r.first_ts, r.request;
