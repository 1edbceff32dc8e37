-- Gateway log files ingested: per file, lines read, events stored, lines rejected,
-- and the time range of its timestamped events (NULL when none carried a time).
-- Reads: log_files, log_events.
SELECT f.path,
       f.kind,
       f.lines,
       f.events,
       f.rejected,
       t.first_ts,
       t.last_ts
FROM log_files f
LEFT JOIN (SELECT file_id, min(ts) AS first_ts, max(ts) AS last_ts
           FROM log_events GROUP BY file_id) t USING (file_id)
ORDER BY f.path;
