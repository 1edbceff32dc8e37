-- remints_log_spans: which stretches of time the gateway logs read cover, per file, and the
-- epoch the gateway said it was in over time. An escrow's evidence outside every span has
-- rotated away (or was never read): the remints analysis names the gap instead of guessing.
--
-- Answers: one row per (kind = 'span') log file with the time of its first and last
-- timestamped line, and one row per (kind = 'epoch') line that names the current epoch
-- (the phase gate's epoch=, path 'phase_gate <reason>', and the rotator's regular mints, path
-- 'escrow_rotation_created', logged with the epoch in force).
-- Reads: log_files, log_events, log_phase_gate, log_escrow_events.
SELECT 'span' AS kind, f.path, min(e.ts) AS first_ts, max(e.ts) AS last_ts, count(*) AS lines, NULL::BIGINT AS epoch
FROM log_events e JOIN log_files f USING (file_id)
WHERE e.ts IS NOT NULL
GROUP BY f.file_id, f.path
UNION ALL
SELECT 'epoch', 'phase_gate ' || coalesce(reason, ''), ts, ts, NULL, epoch FROM log_phase_gate
WHERE epoch IS NOT NULL AND ts IS NOT NULL
UNION ALL
SELECT 'epoch', 'escrow_rotation_created', ts, ts, NULL, epoch FROM log_escrow_events
WHERE event = 'escrow_rotation_created' AND role = 'regular' AND epoch IS NOT NULL AND ts IS NOT NULL
ORDER BY kind DESC, first_ts;
