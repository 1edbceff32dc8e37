-- log_host_lines (views/log_host_lines.sql), brought up to date with the lines of
-- queries/refresh/changed.sql. Its rows add up: the view over the new lines alone (log_events
-- narrowed to them) gives each label's new lines and their first and last time, which join
-- the label's kept row (the lines added, the times widened) or make a new one.
CREATE OR REPLACE TEMP VIEW log_events AS
SELECT * FROM {store}.log_events WHERE rowid >= {since};

CREATE OR REPLACE TEMP TABLE refresh_host_lines AS
SELECT n.label, n.lines + coalesce(k.lines, 0) AS lines,
       least(n.first_ts, k.first_ts) AS first_ts, greatest(n.last_ts, k.last_ts) AS last_ts
FROM {store}.log_host_lines n LEFT JOIN {store}.derived_log_host_lines k USING (label);

DELETE FROM {store}.derived_log_host_lines WHERE label IN (SELECT label FROM refresh_host_lines);

INSERT INTO {store}.derived_log_host_lines BY NAME SELECT * FROM refresh_host_lines;
