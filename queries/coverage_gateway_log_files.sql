-- Gateway log files ingested: per file, lines read, events stored (those the store holds
-- now: auditor prune drops old ones, and log_files.events counts every one ever stored),
-- lines rejected, the time range of its timestamped events (NULL when none carried a time),
-- and whether the file is gone (rotated away, truncated or deleted since it was read: its
-- rows are kept; gone_at says when a run found it gone).
-- Reads: log_files, log_events.
SELECT f.path,
       f.kind,
       f.lines,
       coalesce(t.events, 0) AS events,
       f.rejected,
       t.first_ts,
       t.last_ts,
       f.gone_at IS NOT NULL AS gone,
       f.gone_at
FROM log_files f
LEFT JOIN (SELECT file_id, count(*) AS events, min(ts) AS first_ts, max(ts) AS last_ts
           FROM log_events GROUP BY file_id) t USING (file_id)
ORDER BY f.path, f.file_id;
