-- remints_evidence_lines: where the lines a remints finding rests on are (file and line), for
-- its evidence: each escrow of $escrows's own lines (those naming it without a request: its
-- mint, balance checks, exhaustion, holds, replacement, deactivation) and every line of each
-- request of $requests (the one that could not reserve on it), in log order.
-- Reads: log_events, log_files.
SELECT f.path, e.line_no, e.name, e.escrow, e.request
FROM log_events e
JOIN log_files f USING (file_id)
WHERE (e.request IS NULL AND list_contains($escrows, e.escrow))
   OR list_contains($requests, e.request)
ORDER BY e.file_id, e.line_no;
