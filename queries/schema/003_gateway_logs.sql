-- 003 gateway logs: what `auditor collect --gateway-log PATH` reads from devshardctl logs
-- (docs: gateway-logs.md). Source module: auditor/sources/gatewaylog.py.
--
-- Raw tables:
--   log_files           one row per file read (or stdin content): identity and read position
--   log_events          one row per recognised line (stage line or raw event)
--   log_rejects         per file and reason, how many lines were not gateway lines / malformed
--   log_reject_samples  the first few rejected lines per file and reason, to show the user
-- Typed views for the analyses (all read log_events):
--   log_requests, log_hedge_decisions, log_attempts, log_nonce_dispositions, log_ghosts,
--   log_escrow_events, log_phase_gate, log_limiter_rejections, log_host_labels (redefined in 006)
--
-- Reading is incremental: a file's rows and its log_files row are written in one
-- transaction per block, so log_files.byte_offset is always the end of the last line
-- stored. A rotated or truncated file has its rows replaced (generation + 1).
-- Conventions in log_events.fields: every key=value pair of the line except the line's
-- identity (request= before stage=, and the first stage=); text-line values are strings
-- (read them with TRY_CAST), JSON-record values keep their JSON type; `_text` holds free
-- text that is not a pair (the em-dash tail of escrow_balance_low), `_event` the event
-- words of a `chain phase gate:` line. Go-quoted values are unescaped.

CREATE TABLE log_files (
    file_id        INTEGER PRIMARY KEY,
    path           VARCHAR NOT NULL,     -- absolute path; 'stdin:<sha256 prefix>' for '-'
    kind           VARCHAR NOT NULL,     -- plain | gz | stdin
    device         UBIGINT,
    inode          UBIGINT,
    size           BIGINT,               -- file size at the last read (compressed size for gz)
    mtime          TIMESTAMPTZ,
    head_len       INTEGER NOT NULL,     -- bytes covered by head_sha256 (first <= 4096 bytes read)
    head_sha256    VARCHAR,              -- of the first head_len bytes (compressed bytes for gz)
    content_sha256 VARCHAR,              -- stdin: sha256 of the whole content
    byte_offset    BIGINT NOT NULL,      -- end of the last complete line stored (uncompressed offset)
    lines          BIGINT NOT NULL,      -- lines consumed (stored + rejected)
    events         BIGINT NOT NULL,      -- rows in log_events
    rejected       BIGINT NOT NULL,      -- lines counted in log_rejects
    complete       BOOLEAN NOT NULL,     -- gz / stdin: read to the end
    generation     INTEGER NOT NULL,     -- times read again from the start (rotation, truncation, change)
    first_read_at  TIMESTAMPTZ NOT NULL,
    last_read_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE log_events (
    file_id     INTEGER NOT NULL,        -- log_files.file_id
    line_no     BIGINT NOT NULL,         -- 1-based line number in the (uncompressed) file
    byte_offset BIGINT NOT NULL,         -- offset of the line's first byte
    ts          TIMESTAMPTZ,             -- Docker prefix/wrapper time, else the slog record time, else the Go prefix (read as UTC)
    ts_source   ENUM('docker', 'record', 'go'),      -- where ts came from (NULL: no timestamp)
    fmt         ENUM('text', 'json', 'slog_text') NOT NULL,
    level       VARCHAR,                 -- slog level (INFO | WARN | ERROR); NULL in text mode
    kind        ENUM('stage', 'event') NOT NULL,
    name        VARCHAR NOT NULL,        -- the stage, or the raw event name (chain_phase_gate,
                                         -- devshard_deactivated, gateway_zero_capacity for the free-text lines)
    request     VARCHAR,                 -- request id (req-<UnixNano>-<seq>)
    escrow      BIGINT,                  -- escrow= (decimal id) when it is an integer
    nonce       BIGINT,                  -- nonce=
    host        VARCHAR,                 -- host= : last 8 characters of the participant address (see log_host_labels)
    fields      JSON NOT NULL            -- the other key/value pairs, see the header
);

CREATE TABLE log_rejects (
    file_id  INTEGER NOT NULL,
    reason   VARCHAR NOT NULL,           -- blank | invalid_utf8 | not_gateway | bad_quote | bad_json | line_too_long
    lines    BIGINT NOT NULL
);

CREATE TABLE log_reject_samples (
    file_id     INTEGER NOT NULL,
    reason      VARCHAR NOT NULL,
    line_no     BIGINT NOT NULL,
    byte_offset BIGINT NOT NULL,
    line        VARCHAR NOT NULL          -- at most 500 characters; invalid UTF-8 shown with \x escapes
);

-- One row per request id: admission, routing, the hedging decision and the outcome.
-- outcome: succeeded | failed | rejected (limiter) | NULL (no terminal line in the logs read).
CREATE VIEW log_requests AS
SELECT
    request,
    min(ts) AS first_ts,
    max(ts) AS last_ts,
    count(*) AS lines,
    first(escrow ORDER BY file_id, line_no) FILTER (WHERE escrow IS NOT NULL) AS escrow,
    first(fields->>'model' ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('gateway_request_received', 'proxy_request_started', 'runner_started')) AS model,
    first(TRY_CAST(fields->>'input_tokens' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'gateway_request_received') AS input_tokens_est,    -- ~ body bytes / 4
    first(TRY_CAST(fields->>'input_tokens' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('proxy_request_started', 'runner_started')) AS input_bytes,  -- body bytes (enters the escrow cost)
    first(TRY_CAST(fields->>'stream' AS BOOLEAN) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'proxy_request_started') AS stream,
    first(fields->>'decision' ORDER BY file_id, line_no) FILTER (WHERE name = 'decision_made') AS decision,
    first(nonce ORDER BY file_id, line_no) FILTER (WHERE name = 'decision_made') AS primary_nonce,
    first(host ORDER BY file_id, line_no) FILTER (WHERE name = 'decision_made') AS primary_host,
    first(TRY_CAST(fields->>'max_attempts' AS INTEGER) ORDER BY file_id, line_no)
        FILTER (WHERE name = 'decision_made') AS max_attempts,
    count(*) FILTER (WHERE name = 'race_completed') AS attempts,
    count(*) FILTER (WHERE name = 'race_completed' AND fields->>'winner' = 'false'
                       AND fields->>'finished' = 'true' AND coalesce(fields->>'probe', 'false') = 'false') AS suppressed_losers,
    first(TRY_CAST(fields->>'winner_nonce' AS BIGINT) ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('request_succeeded', 'request_fully_settled')) AS winner_nonce,
    CASE WHEN bool_or(name = 'request_succeeded') THEN 'succeeded'
         WHEN bool_or(name IN ('request_failed', 'proxy_stream_failed')) THEN 'failed'
         WHEN bool_or(name = 'gateway_limiter_rejected') THEN 'rejected' END AS outcome,
    first(fields->>'outcome' ORDER BY file_id, line_no) FILTER (WHERE name = 'request_fully_settled') AS settle_outcome,
    first(fields->>'error' ORDER BY file_id, line_no)
        FILTER (WHERE name IN ('request_failed', 'proxy_stream_failed', 'runner_prepare_failed')) AS error,
    bool_or(name = 'runner_prepare_failed' AND fields->>'error' LIKE '%insufficient escrow balance%') AS insufficient_balance,
    bool_or(name = 'gateway_limiter_rejected') AS limiter_rejected
FROM log_events
WHERE request IS NOT NULL
GROUP BY request;

-- The hedging decision of each request (decision_made: logged with the primary's nonce).
CREATE VIEW log_hedge_decisions AS
SELECT
    file_id, line_no, ts, request, escrow,
    nonce AS primary_nonce,
    host AS primary_host,
    fields->>'decision' AS decision,
    TRY_CAST(fields->>'delay_ms' AS BIGINT) AS delay_ms,
    TRY_CAST(fields->>'delay_ms' AS BIGINT) = 0 AS immediate,     -- a secondary starts at once
    TRY_CAST(fields->>'max_attempts' AS INTEGER) AS max_attempts,
    TRY_CAST(fields->>'group_size' AS INTEGER) AS group_size,
    coalesce(TRY_CAST(fields->>'primary_no_winner' AS BOOLEAN), false) AS primary_no_winner,
    fields->>'primary_no_winner_reason' AS primary_no_winner_reason,
    fields->>'primary_quarantine_mode' AS primary_quarantine_mode,
    TRY_CAST(fields->>'primary_failure_strikes' AS INTEGER) AS primary_failure_strikes
FROM log_events
WHERE kind = 'stage' AND name = 'decision_made';

-- One row per attempt: the race_completed line, with its role (primary = the nonce of the
-- request's decision_made, else secondary), the attempt's terminal stage, whether its
-- stream was suppressed, and its nonce_disposition when logged.
CREATE VIEW log_attempts AS
WITH rc AS (
    SELECT * FROM log_events WHERE kind = 'stage' AND name = 'race_completed'
), dm AS (
    SELECT request, escrow, first(nonce ORDER BY file_id, line_no) AS primary_nonce,
           first(fields->>'decision' ORDER BY file_id, line_no) AS decision
    FROM log_events WHERE kind = 'stage' AND name = 'decision_made' AND request IS NOT NULL
    GROUP BY request, escrow
), term AS (
    SELECT escrow, nonce,
           last(name ORDER BY file_id, line_no) FILTER (WHERE name NOT IN ('stream_suppressed', 'first_token',
                                                        'receipt_received')) AS terminal_stage,
           bool_or(name = 'stream_suppressed') AS stream_suppressed,
           first(fields->>'route' ORDER BY file_id, line_no) FILTER (WHERE name = 'first_token') AS first_token_route,
           first(TRY_CAST(fields->>'elapsed_ms' AS BIGINT) ORDER BY file_id, line_no)
               FILTER (WHERE name = 'receipt_received') AS receipt_ms
    FROM log_events
    WHERE kind = 'stage' AND nonce IS NOT NULL AND escrow IS NOT NULL
      AND name IN ('send_completed', 'send_failed', 'empty_stream', 'error_stream', 'phase_transition_aborted',
                   'process_response_failed', 'winner_stream_hard_timeout', 'speculative_attempt_canceled',
                   'winner_write_ctx_cancelled', 'stream_suppressed', 'first_token', 'receipt_received')
    GROUP BY escrow, nonce
), disp AS (
    SELECT escrow, nonce, last(fields->>'disposition' ORDER BY file_id, line_no) AS disposition,
           last(fields->>'dispatch_phase' ORDER BY file_id, line_no) AS dispatch_phase
    FROM log_events WHERE kind = 'stage' AND name = 'nonce_disposition' AND escrow IS NOT NULL
    GROUP BY escrow, nonce
)
SELECT
    rc.file_id, rc.line_no, rc.ts, rc.request, rc.escrow, rc.nonce, rc.host,
    TRY_CAST(rc.fields->>'host_idx' AS INTEGER) AS host_idx,
    rc.fields->>'participant' AS participant,
    rc.fields->>'model' AS model,
    TRY_CAST(rc.fields->>'input_tokens' AS BIGINT) AS input_bytes,
    TRY_CAST(rc.fields->>'winner' AS BOOLEAN) AS winner,
    TRY_CAST(rc.fields->>'finished' AS BOOLEAN) AS finished,
    TRY_CAST(rc.fields->>'responsive' AS BOOLEAN) AS responsive,
    TRY_CAST(rc.fields->>'has_receipt' AS BOOLEAN) AS has_receipt,
    TRY_CAST(rc.fields->>'confirmed_at' AS BIGINT) AS confirmed_at,
    TRY_CAST(rc.fields->>'attempt_ms' AS BIGINT) AS attempt_ms,
    TRY_CAST(rc.fields->>'output_chunks' AS BIGINT) AS output_chunks,
    TRY_CAST(rc.fields->>'content_chunks' AS BIGINT) AS content_chunks,
    TRY_CAST(rc.fields->>'output_bytes' AS BIGINT) AS output_bytes,
    TRY_CAST(rc.fields->>'stream_bytes_read' AS BIGINT) AS stream_bytes_read,
    TRY_CAST(rc.fields->>'usage_tokens' AS BIGINT) AS usage_tokens,
    TRY_CAST(rc.fields->>'max_gap_ms' AS BIGINT) AS max_gap_ms,
    TRY_CAST(rc.fields->>'mean_gap_ms' AS BIGINT) AS mean_gap_ms,
    nullif(rc.fields->>'content_source', '') AS content_source,
    nullif(rc.fields->>'error_source', '') AS error_source,
    coalesce(TRY_CAST(rc.fields->>'probe' AS BOOLEAN), false) AS probe,
    coalesce(TRY_CAST(rc.fields->>'suspicious' AS BOOLEAN), false) AS suspicious,
    rc.fields->>'failure_reason' AS failure_reason,
    TRY_CAST(rc.fields->>'stall_count' AS INTEGER) AS stall_count,
    rc.fields->>'stalls' AS stalls,                            -- a JSON array, as logged
    CASE WHEN dm.primary_nonce IS NULL THEN NULL
         WHEN dm.primary_nonce = rc.nonce THEN 'primary' ELSE 'secondary' END AS role,
    dm.primary_nonce,
    dm.decision,
    (TRY_CAST(rc.fields->>'winner' AS BOOLEAN) = false AND TRY_CAST(rc.fields->>'finished' AS BOOLEAN)
        AND NOT coalesce(TRY_CAST(rc.fields->>'probe' AS BOOLEAN), false)) AS suppressed_loser,
    term.terminal_stage,
    coalesce(term.stream_suppressed, false) AS stream_suppressed,
    term.first_token_route,
    term.receipt_ms,
    disp.disposition,
    disp.dispatch_phase
FROM rc
LEFT JOIN dm ON dm.request = rc.request AND dm.escrow IS NOT DISTINCT FROM rc.escrow
LEFT JOIN term ON term.escrow = rc.escrow AND term.nonce = rc.nonce
LEFT JOIN disp ON disp.escrow = rc.escrow AND disp.nonce = rc.nonce;

-- nonce_disposition lines: the gateway's own classification of every nonce (accounting vocabulary).
CREATE VIEW log_nonce_dispositions AS
SELECT
    file_id, line_no, ts, request, escrow, nonce,
    fields->>'disposition' AS disposition,
    nullif(fields->>'dispatch_phase', '') AS dispatch_phase,
    nullif(fields->>'timeout_evaluation_phase', '') AS timeout_evaluation_phase,
    nullif(fields->>'quarantine_mode', '') AS quarantine_mode,
    nullif(fields->>'no_send_reason', '') AS no_send_reason,
    nullif(fields->>'failure_origin', '') AS failure_origin,
    nullif(fields->>'timeout_kind', '') AS timeout_kind,
    nullif(fields->>'timeout_outcome', '') AS timeout_outcome,
    nullif(fields->>'timeout_reason', '') AS timeout_reason,
    nullif(fields->>'detail_reason', '') AS detail_reason,
    fields->>'participant' AS participant,
    fields->>'model' AS model,
    TRY_CAST(fields->>'lag_ms' AS BIGINT) AS lag_ms
FROM log_events
WHERE kind = 'stage' AND name = 'nonce_disposition';

-- Ghost nonces burned by the picker (session_picker_ghost_probe: no request, no escrow).
-- escrow is attributed from a nonce_disposition line with disposition=ghost for the same
-- nonce within 120 s when exactly one escrow matches (escrow_candidates says how many did).
CREATE VIEW log_ghosts AS
WITH g AS (
    SELECT file_id, line_no, ts, nonce, fields FROM log_events
    WHERE kind = 'stage' AND name = 'session_picker_ghost_probe'
), d AS (
    SELECT escrow, nonce, ts FROM log_events
    WHERE kind = 'stage' AND name = 'nonce_disposition' AND fields->>'disposition' = 'ghost' AND escrow IS NOT NULL
), m AS (
    SELECT g.file_id, g.line_no, count(DISTINCT d.escrow) AS n, min(d.escrow) AS escrow
    FROM g JOIN d ON d.nonce = g.nonce AND d.ts BETWEEN g.ts - INTERVAL 120 SECOND AND g.ts + INTERVAL 120 SECOND
    GROUP BY g.file_id, g.line_no
)
SELECT
    g.file_id, g.line_no, g.ts, g.nonce,
    g.fields->>'reason' AS reason,                 -- poc_unavailable_host | participant_throttled_no_send | ...
    TRY_CAST(g.fields->>'host_idx' AS INTEGER) AS host_idx,
    TRY_CAST(g.fields->>'queue_depth' AS INTEGER) AS queue_depth,
    coalesce(TRY_CAST(g.fields->>'no_send' AS BOOLEAN), false) AS no_send,
    g.fields->>'participant_key' AS participant,
    g.fields->>'model_id' AS model,
    CASE WHEN m.n = 1 THEN m.escrow END AS escrow,
    coalesce(m.n, 0) AS escrow_candidates
FROM g LEFT JOIN m ON m.file_id = g.file_id AND m.line_no = g.line_no;

-- The escrow lifecycle (section 6): request-triggered exhaustion, deactivation, replacement
-- and rotation mints, periodic balance/nonce checks, holds, retirement and settlement, and the
-- runner_prepare_failed stage that starts the exhaustion chain.
CREATE VIEW log_escrow_events AS
SELECT
    file_id, line_no, ts, kind,
    name AS event,
    coalesce(escrow, TRY_CAST(fields->>'old_escrow' AS BIGINT)) AS escrow,
    TRY_CAST(fields->>'new_escrow' AS BIGINT) AS new_escrow,
    request,
    fields->>'reason' AS reason,
    fields->>'model' AS model,
    fields->>'role' AS role,
    TRY_CAST(fields->>'epoch' AS BIGINT) AS epoch,
    fields->>'tx_hash' AS tx_hash,
    TRY_CAST(fields->>'balance' AS HUGEINT) AS balance,
    TRY_CAST(fields->>'threshold' AS HUGEINT) AS threshold,
    CASE WHEN name = 'escrow_nonce_high' THEN nonce END AS nonce,
    TRY_CAST(fields->>'limit' AS BIGINT) AS nonce_limit,
    TRY_CAST(fields->>'deactivated_in_store' AS BOOLEAN) AS deactivated_in_store,
    TRY_CAST(fields->>'settlement_due' AS BOOLEAN) AS settlement_due,
    TRY_CAST(fields->>'release_balance' AS HUGEINT) AS release_balance,
    TRY_CAST(fields->>'recoverable_in_flight' AS HUGEINT) AS recoverable_in_flight,
    fields->>'on_hold_since' AS on_hold_since,
    fields->>'error' AS error,
    (name = 'runner_prepare_failed' AND fields->>'error' LIKE '%insufficient escrow balance%') AS insufficient_balance,
    fields
FROM log_events
WHERE (kind = 'event' AND (
          name LIKE 'escrow\_%' ESCAPE '\' OR name LIKE 'settlement\_%' ESCAPE '\'
          OR name LIKE 'auto\_settle\_%' ESCAPE '\' OR name LIKE 'runtime\_retire%' ESCAPE '\'
          OR name LIKE 'devshard\_settle\_%' ESCAPE '\'
          OR name IN ('gateway_replacing_exhausted_escrow', 'devshard_deactivated')))
   OR (kind = 'stage' AND name = 'runner_prepare_failed');

-- `chain phase gate:` lines (section 3.4 and 7.1): PoC phase transitions and preserved sets.
CREATE VIEW log_phase_gate AS
SELECT
    file_id, line_no, ts,
    fields->>'_event' AS gate_event,              -- phase active | phase inactive | preserved participants loaded | ...
    nullif(fields->>'reason', '') AS reason,      -- poc | confirmation_poc | NULL
    fields->>'chain_phase' AS chain_phase,
    fields->>'confirmation_poc_phase' AS confirmation_poc_phase,
    TRY_CAST(fields->>'epoch' AS BIGINT) AS epoch,
    TRY_CAST(fields->>'block_height' AS BIGINT) AS block_height,
    TRY_CAST(fields->>'requests_blocked' AS BOOLEAN) AS requests_blocked,
    TRY_CAST(fields->>'max_attempts' AS INTEGER) AS max_attempts,
    TRY_CAST(fields->>'count' AS INTEGER) AS preserved_count,
    CASE WHEN fields->>'participants' IS NOT NULL
         THEN list_filter(string_split(fields->>'participants', ','), lambda x: x <> '') END AS preserved_labels,
    TRY_CAST(fields->>'excluded_count' AS INTEGER) AS excluded_count,
    CASE WHEN fields->>'excluded_participants' IS NOT NULL
         THEN list_filter(string_split(fields->>'excluded_participants', ','), lambda x: x <> '') END AS excluded_labels,
    fields
FROM log_events
WHERE kind = 'event' AND name = 'chain_phase_gate';

-- Requests the gateway turned away: limiter rejections (stage gateway_limiter_rejected),
-- all-escrows-at-zero-capacity 429s, and per-participant limiter rejections.
CREATE VIEW log_limiter_rejections AS
SELECT
    file_id, line_no, ts, request,
    CASE WHEN name = 'gateway_limiter_rejected' THEN 'limiter'
         WHEN name = 'gateway_zero_capacity' THEN 'zero_capacity'
         ELSE 'participant_limit' END AS source,
    CASE WHEN name = 'gateway_zero_capacity' THEN 'zero_capacity' ELSE fields->>'reason' END AS reason,
    fields->>'model' AS model,
    TRY_CAST(fields->>'input_tokens' AS BIGINT) AS input_tokens,
    TRY_CAST(fields->>'in_flight' AS BIGINT) AS in_flight,
    TRY_CAST(fields->>'limit' AS BIGINT) AS "limit",
    TRY_CAST(fields->>'candidates' AS INTEGER) AS candidate_escrows,
    fields->>'weights' AS escrow_weights,
    fields->>'participant_key' AS participant
FROM log_events
WHERE name IN ('gateway_limiter_rejected', 'gateway_zero_capacity', 'participant_limit_rejected');

-- Host labels (the last 8 characters of a participant address; shorter addresses whole)
-- [superseded by 006_host_labels_accounting.sql, which also resolves against accounting]
-- resolved against the chain's participants (chain_validation_weights): 'resolved' when exactly
-- one address ends with the label, 'ambiguous' when several do, 'unknown' when none (or no
-- chain data yet). log_address: the full address the logs themselves show for the label
-- (race_completed / nonce_disposition participant) when exactly one.
CREATE VIEW log_host_labels AS
WITH labels AS (
    SELECT host AS label, count(*) AS lines, min(ts) AS first_ts, max(ts) AS last_ts
    FROM log_events WHERE host IS NOT NULL GROUP BY host
), chain AS (
    SELECT DISTINCT participant,
           CASE WHEN length(participant) > 8 THEN right(participant, 8) ELSE participant END AS label
    FROM chain_validation_weights
), cm AS (
    SELECT label, count(*) AS n, min(participant) AS address FROM chain GROUP BY label
), seen AS (
    SELECT DISTINCT fields->>'participant' AS participant FROM log_events
    WHERE kind = 'stage' AND name IN ('race_completed', 'nonce_disposition')
), sm AS (
    SELECT CASE WHEN length(participant) > 8 THEN right(participant, 8) ELSE participant END AS label,
           count(*) AS n, min(participant) AS address
    FROM seen WHERE participant IS NOT NULL AND participant <> '' GROUP BY 1
)
SELECT
    l.label,
    CASE WHEN cm.n = 1 THEN 'resolved' WHEN cm.n > 1 THEN 'ambiguous' ELSE 'unknown' END AS status,
    CASE WHEN cm.n = 1 THEN cm.address END AS address,
    coalesce(cm.n, 0) AS candidates,
    CASE WHEN sm.n = 1 THEN sm.address END AS log_address,
    l.lines, l.first_ts, l.last_ts
FROM labels l
LEFT JOIN cm ON cm.label = l.label
LEFT JOIN sm ON sm.label = l.label;
