-- remints_request_tallies: what an escrow's requests add up to before a moment, for each
-- (escrow, moment) the remints analysis asks about: the balance estimates (requests since
-- the mint, or since a logged balance), the periodic check's 30 s, the recent ordinary use
-- before a failure, an escrow's whole life. A window [a, b) is the tally at b less the tally
-- at a. Each request counts once, at the first of its escrow's moments after it, and the
-- tally at a moment adds up those of the escrow's moments up to it (a million requests, a
-- few thousand moments).
--
-- The moments come as two lists of the same length, $escrows and $times (a NULL time: all of
-- the escrow's requests); i is a moment's place in them, from 0. Only requests with a time count here; those logged without one
-- (remints_requests.sql) are placed by the analysis and added there.
--
-- Answers, per moment, over the escrow's requests with first_ts < t:
--   requests, last                the requests of any kind, and the latest time among them;
--   served                        those not refused for insufficient balance (they reserved);
--   served_attempts               their attempts, at least 1 each (race_completed lines);
--   served_units                  their sum of (input bytes + max_tokens) x attempts, where the
--                                 input bytes are known; max_tokens where a line of the request
--                                 logged it, else the cap 4,096 (RequestMaxTokensCap), since it
--                                 is not logged: x token_price, the most they can have reserved;
--   served_bytes_unknown          served requests whose input bytes are not logged (their
--                                 reservation, so the sum, is unknown);
--   succeeded, last_succeeded     requests that succeeded, and the latest time among them.
-- Reads: log_requests, log_request_lines.
WITH m AS (
    SELECT unnest(range(len($escrows::BIGINT[]))) AS i, unnest($escrows::BIGINT[]) AS escrow,
           coalesce(unnest($times::TIMESTAMPTZ[]), 'infinity'::TIMESTAMPTZ) AS t
),
req AS (
    SELECT request, escrow, first_ts AS ts, NOT coalesce(insufficient_balance, false) AS served,
           input_bytes, greatest(coalesce(attempts, 0), 1) AS attempts, outcome
    FROM log_requests
    WHERE escrow IN (SELECT escrow FROM m) AND first_ts IS NOT NULL
),
mt AS (
    SELECT request, first(max_tokens ORDER BY pos) AS max_tokens
    FROM log_request_lines
    WHERE logs_max_tokens
    GROUP BY request
),
at_once AS (    -- the requests of an escrow that started at the same time
    SELECT escrow, ts, count(*) AS requests,
           count(*) FILTER (WHERE served) AS served,
           sum(attempts) FILTER (WHERE served) AS served_attempts,
           sum((input_bytes + coalesce(nullif(mt.max_tokens, 0), 4096)) * attempts) FILTER (WHERE served) AS served_units,
           count(*) FILTER (WHERE served AND input_bytes IS NULL) AS served_bytes_unknown,
           count(*) FILTER (WHERE outcome = 'succeeded') AS succeeded
    FROM req LEFT JOIN mt USING (request)
    GROUP BY escrow, ts
),
between_moments AS (    -- each request counts at the first of its escrow's moments after it
    SELECT m.i, sum(a.requests) AS requests, max(a.ts) AS last,
           sum(a.served) AS served, sum(a.served_attempts) AS served_attempts, sum(a.served_units) AS served_units,
           sum(a.served_bytes_unknown) AS served_bytes_unknown, sum(a.succeeded) AS succeeded,
           max(a.ts) FILTER (WHERE a.succeeded > 0) AS last_succeeded
    FROM at_once a ASOF JOIN m ON a.escrow = m.escrow AND a.ts < m.t
    GROUP BY m.i
)
SELECT m.i,    -- and so at a moment, the requests counted at it and at the escrow's earlier ones
       coalesce(sum(b.requests) OVER w, 0) AS requests, max(b.last) OVER w AS last,
       coalesce(sum(b.served) OVER w, 0) AS served, coalesce(sum(b.served_attempts) OVER w, 0) AS served_attempts,
       coalesce(sum(b.served_units) OVER w, 0) AS served_units,
       coalesce(sum(b.served_bytes_unknown) OVER w, 0) AS served_bytes_unknown,
       coalesce(sum(b.succeeded) OVER w, 0) AS succeeded, max(b.last_succeeded) OVER w AS last_succeeded
FROM m LEFT JOIN between_moments b USING (i)
WINDOW w AS (PARTITION BY m.escrow ORDER BY m.t ROWS UNBOUNDED PRECEDING)
ORDER BY m.i;
