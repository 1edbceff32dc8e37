-- remints_requests: every request the logs show on an escrow, with what it reserved or tried
-- to reserve (gateway-logs.md 6.1: reservation = (input bytes + max_tokens) x token_price,
-- per attempt, since each attempt starts its own inference on its own nonce).
--
-- Answers, per request with an escrow: its time, escrow, model, input bytes (the body length
-- proxy_request_started / runner_started log as input_tokens), the max_tokens a line of the
-- request logged (NULL: not logged, the usual case: the gateway then applied its default),
-- the attempts it ran (race_completed lines), its outcome, and whether it failed to reserve
-- ("insufficient escrow balance"), with the time of that failure.
-- Reads: log_requests, log_request_lines, log_escrow_events.
WITH mt AS (
    SELECT request, first(max_tokens ORDER BY pos) AS max_tokens
    FROM log_request_lines
    WHERE logs_max_tokens
    GROUP BY request
),
fail AS (
    SELECT request, min(ts) AS failed_at
    FROM log_escrow_events WHERE insufficient_balance GROUP BY request
)
SELECT r.request, r.first_ts AS ts, r.escrow, r.model, r.input_bytes, mt.max_tokens AS max_tokens_logged,
       r.attempts, r.outcome, coalesce(r.insufficient_balance, false) AS insufficient_balance,
       fail.failed_at, r.error
FROM log_requests r
LEFT JOIN mt USING (request)
LEFT JOIN fail USING (request)
WHERE r.escrow IS NOT NULL
ORDER BY r.escrow, r.first_ts, r.request;
