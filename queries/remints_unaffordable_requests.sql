-- remints_unaffordable_requests: the requests the pooled route could fund on no escrow
-- (gateway-logs.md 14.1, the October 2026 gateway: #1799's fix at work). The gateway offered
-- each to its model's escrows, each refused (gateway_escrow_refused_funding), and it answered
-- 503 with Retry-After (gateway_all_escrows_refused_funding): no escrow was retired, none
-- spent a nonce or balance; the client's cost is the 503.
--
-- Answers, one row per gateway_all_escrows_refused_funding line: the request, its model, how
-- many escrows refused it and which (its gateway_escrow_refused_funding lines, in order), when,
-- the Retry-After the gateway gave, the reservation, input bytes and max_tokens when a line
-- of the request gives them, and its admission line's input_tokens (an estimate, ~ body
-- bytes / 4: not what a reservation counts).
-- Reads: log_escrow_routing, log_request_lines.
WITH refused AS (
    SELECT request,
           list(escrow ORDER BY file_id, line_no) FILTER (WHERE event = 'gateway_escrow_refused_funding'
                                                            AND escrow IS NOT NULL) AS escrows,
           first(reservation ORDER BY file_id, line_no) FILTER (WHERE reservation IS NOT NULL) AS reservation,
           first(input_bytes ORDER BY file_id, line_no) FILTER (WHERE input_bytes IS NOT NULL) AS input_bytes,
           first(max_tokens ORDER BY file_id, line_no) FILTER (WHERE max_tokens IS NOT NULL) AS max_tokens
    FROM log_escrow_routing
    WHERE request IS NOT NULL AND event IN ('gateway_escrow_refused_funding', 'gateway_all_escrows_refused_funding')
    GROUP BY request
),
admitted AS (
    SELECT request,
           first(model ORDER BY pos) FILTER (WHERE model IS NOT NULL) AS model,
           first(input_tokens ORDER BY pos) FILTER (WHERE name = 'gateway_request_received') AS input_tokens_estimate,
           first(input_tokens ORDER BY pos)
               FILTER (WHERE name IN ('proxy_request_started', 'runner_started')) AS input_bytes,
           first(max_tokens ORDER BY pos) FILTER (WHERE logs_max_tokens) AS max_tokens
    FROM log_request_lines
    WHERE request IN (SELECT request FROM refused)
    GROUP BY request
)
SELECT a.request,
       coalesce(a.model, ad.model) AS model,
       a.escrows_refused,
       coalesce(r.escrows, []) AS escrows,
       a.ts AS at,
       a.retry_after_seconds,
       r.reservation,
       coalesce(r.input_bytes, ad.input_bytes) AS input_bytes,
       coalesce(r.max_tokens, ad.max_tokens) AS max_tokens,
       ad.input_tokens_estimate,
       a.error
FROM log_escrow_routing a
LEFT JOIN refused r USING (request)
LEFT JOIN admitted ad USING (request)
WHERE a.event = 'gateway_all_escrows_refused_funding'
ORDER BY a.ts, a.file_id, a.line_no;
