-- retention_dropped_span: what `auditor prune` drops with the cutoff $cutoff (the start of the
-- oldest epoch it keeps), before it does: the gateway log's lines timed before it (how many,
-- their first and last time), and the lines without a time, which stay (unknown is not old).
-- Reads: log_events (every stored line).
SELECT count(*) FILTER (WHERE ts < $cutoff) AS lines,
       min(ts) FILTER (WHERE ts < $cutoff) AS first_ts,
       max(ts) FILTER (WHERE ts < $cutoff) AS last_ts,
       count(*) FILTER (WHERE ts IS NULL) AS untimed
FROM log_events;
