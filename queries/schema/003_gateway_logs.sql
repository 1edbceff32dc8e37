-- 003 gateway logs: what `auditor collect --gateway-log PATH` reads from devshardctl logs
-- (docs: gateway-logs.md). Source module: auditor/sources/gatewaylog.py.
--
-- Raw tables:
--   log_files           one row per file read (or stdin content): identity and read position
--   log_events          one row per recognised line (stage line or raw event)
--   log_rejects         per file and reason, how many lines were not gateway lines / malformed
--   log_reject_samples  the first few rejected lines per file and reason, to show the user
-- The typed views the analyses read (log_requests, log_attempts, ...) are defined in
-- queries/views/, one file each, and re-created when the store opens.
--
-- Reading is incremental: a file's rows and its log_files row are written in one
-- transaction per block, so log_files.byte_offset is always the end of the last line
-- stored. (Since 009 rows are never deleted: a rotated, copied or compressed file is
-- continued, and a file that rotated away is marked gone; see 009_log_files_gone.sql.)
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
