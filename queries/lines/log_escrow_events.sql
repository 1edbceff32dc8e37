-- The escrow lifecycle (section 6): request-triggered exhaustion, deactivation, replacement
-- and rotation mints, periodic balance/nonce checks, holds, retirement and settlement, and the
-- runner_prepare_failed stage that starts the exhaustion chain.
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
    -- the leading digits when the em-dash tail is glued to the value or mangled ("1000000—holding",
    -- "1000000 -- holding"): that text changed across versions (gateway-logs.md 14.3)
    coalesce(TRY_CAST(fields->>'threshold' AS HUGEINT),
             TRY_CAST(regexp_extract(fields->>'threshold', '^([0-9]+)(?:\s|\x{2014}|\x{2013}|-|\x{e2})', 1) AS HUGEINT))
        AS threshold,
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
-- Each branch of the UNION ALL finds its lines by name: DuckDB then filters the scan itself
-- and decompresses no other line's fields (one OR over kind and name is filtered after the
-- scan, which then reads every line's fields: ~0.5 CPU-s per GB of log, for a few rows).
FROM (SELECT * FROM log_events
      WHERE kind = 'event'
        AND (name LIKE 'escrow\_%' ESCAPE '\' OR name LIKE 'settlement\_%' ESCAPE '\'
             OR name LIKE 'auto\_settle\_%' ESCAPE '\' OR name LIKE 'runtime\_retire%' ESCAPE '\'
             OR name LIKE 'devshard\_settle\_%' ESCAPE '\'
             OR name IN ('gateway_replacing_exhausted_escrow', 'devshard_deactivated'))
      UNION ALL
      SELECT * FROM log_events WHERE kind = 'stage' AND name = 'runner_prepare_failed')
