-- log_host_lines: every 8-character host label the gateway logs print (host=), with how
-- many lines carry it and when they start and end: the logs' half of resolving host labels
-- (the view of the labels resolved reads this one), a view of its own so that an analysis
-- can keep its rows (Store.derived): counting a busy day's lines by host reads every line.
-- Reads: log_events.
CREATE OR REPLACE VIEW log_host_lines AS
SELECT host AS label, count(*) AS lines, min(ts) AS first_ts, max(ts) AS last_ts
FROM log_events WHERE host IS NOT NULL GROUP BY host;
