-- request_decisions: a request's hedging decision, ONE RULE: its first decision_made line (in
-- line order across files: file_id, then line_no), as it is: the primary's nonce it names, the
-- decision, its time, the hedge delay and max_attempts (NULL where that line does not say).
-- The view of every attempt (its primary) and the view of every request (its decision) read
-- it here. (A view's file names only the views it reads: Store._dependency_order.)
-- Reads: log_hedge_decisions.
CREATE OR REPLACE VIEW request_decisions AS
SELECT request,
       arg_min_null(primary_nonce, pos) AS decision_nonce,
       arg_min_null(decision, pos)      AS decision,
       arg_min_null(ts, pos)            AS decision_ts,
       arg_min_null(delay_ms, pos)      AS delay_ms,
       arg_min_null(max_attempts, pos)  AS max_attempts
FROM (SELECT *, file_id::BIGINT * 1000000000000 + line_no AS pos FROM log_hedge_decisions)
WHERE request IS NOT NULL
GROUP BY request;
