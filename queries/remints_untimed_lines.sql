-- remints_untimed_lines: the gateway log lines without any timestamp (a pasted excerpt, a
-- pipeline that cut the prefixes: gateway-logs.md 13.1) that name an escrow or a request,
-- in the order they were read. Order is all they carry: it alone says what came "then"
-- and what falls "within the same request".
--
-- Answers, per such line: its file and line number, its position (ord, over all files in
-- the order read), its name, request, escrow, the new escrow of a replacement line, the
-- epoch= of a rotation line, and whether it is a deactivation or mint line (lifecycle).
-- Reads: log_events, log_files.
SELECT
    row_number() OVER (ORDER BY e.file_id, e.line_no) AS ord,
    f.path, e.line_no, e.name, e.request,
    coalesce(e.escrow, TRY_CAST(e.fields->>'old_escrow' AS BIGINT)) AS escrow,
    TRY_CAST(e.fields->>'new_escrow' AS BIGINT) AS new_escrow,
    TRY_CAST(e.fields->>'epoch' AS BIGINT) AS epoch,
    e.name IN ('escrow_depletion_deactivated', 'devshard_deactivated', 'runtime_retired',
               'escrow_depletion_replacement_created', 'escrow_rotation_created',
               'escrow_balance_exhausted', 'gateway_replacing_exhausted_escrow',
               'escrow_balance_low', 'escrow_nonce_high') AS lifecycle
FROM log_events e
JOIN log_files f USING (file_id)
WHERE e.ts IS NULL
  AND (e.escrow IS NOT NULL OR e.request IS NOT NULL OR e.fields->>'old_escrow' IS NOT NULL)
ORDER BY e.file_id, e.line_no;
