-- remints_logged_threshold: the minimum-balance threshold the gateway itself logged with
-- its periodic low-balance check (escrow_balance_low threshold=): the most frequent value,
-- and how many different values were logged (a changed setting).
-- Reads: log_escrow_events.
SELECT mode(threshold) AS threshold, count(DISTINCT threshold) AS distinct_values
FROM log_escrow_events
WHERE event = 'escrow_balance_low' AND threshold IS NOT NULL;
