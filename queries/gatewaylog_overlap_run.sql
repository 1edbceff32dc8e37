-- gatewaylog_overlap_run: of a parsed block of a new file (_ov_block), the first line that is
-- not the stored file $source's line $shift further on (the same time, kind, name, request,
-- escrow, nonce, host and fields), NULL when every line of the block is; and the block's
-- first line. Lines are compared by number: a line one file rejects the other rejects too.
-- Reads: log_events.
SELECT min(b.line_no) FILTER (WHERE s.line_no IS NULL
                                 OR s.ts IS DISTINCT FROM b.ts
                                 OR s.kind::VARCHAR <> CASE WHEN b.is_stage THEN 'stage' ELSE 'event' END
                                 OR s.name IS DISTINCT FROM b.name
                                 OR s.request IS DISTINCT FROM b.request
                                 OR s.escrow IS DISTINCT FROM b.escrow
                                 OR s.nonce IS DISTINCT FROM b.nonce
                                 OR s.host IS DISTINCT FROM nullif(b.host, '')
                                 OR CAST(s.fields AS VARCHAR) IS DISTINCT FROM b.fields) AS first_new,
       min(b.line_no) AS first_line
FROM _ov_block b
LEFT JOIN log_events s ON s.file_id = $source AND s.line_no = b.line_no + $shift;
