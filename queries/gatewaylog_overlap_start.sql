-- gatewaylog_overlap_start: where a stored file (not $file) holds the line a new file begins
-- with: the same time, kind, name, request, escrow, nonce, host and fields (the newest such
-- file, its first such line). auditor/sources/gatewaylog_overlap.py then compares the lines
-- that follow, line for line.
-- Reads: log_events.
SELECT e.file_id, e.line_no, f.path
FROM log_events e JOIN log_files f USING (file_id)
WHERE e.file_id <> $file
  AND e.ts IS NOT DISTINCT FROM $ts AND e.kind = $kind AND e.name IS NOT DISTINCT FROM $line_name
  AND e.request IS NOT DISTINCT FROM $request AND e.escrow IS NOT DISTINCT FROM $escrow
  AND e.nonce IS NOT DISTINCT FROM $nonce AND e.host IS NOT DISTINCT FROM $host
  AND CAST(e.fields AS VARCHAR) = $fields
ORDER BY e.file_id DESC, e.line_no
LIMIT 1;
