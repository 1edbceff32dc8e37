-- remints_escrow_lives: the life of every escrow the store knows of, one row each: its
-- creation, its chain record, the end-of-life lines the gateway logged about it, and its
-- replacement (gateway-logs.md section 6; chain-api.md 12.3).
--
-- Answers, per escrow id seen in the logs, the accounting API or the chain records:
--   model and creation epoch (chain record first, then the log's escrow_rotation_created,
--   then accounting, where "epoch" is the escrow's creation epoch) and where they came from;
--   the mint (time, role, tx hash); the chain record (found, amount, token_price, settled);
--   the first and last log line about it; the end-of-life lines, each the first of its kind
--   (by time, then by place in the logs):
--   escrow_depletion_deactivated (reason, settlement_due), devshard_deactivated and
--   runtime_retired (rotation disabled), escrow_balance_exhausted,
--   gateway_replacing_exhausted_escrow, escrow_balance_low (balance, threshold),
--   escrow_nonce_high (nonce, limit), the rotator's retirement (escrow_rotation_settling*,
--   escrow_rotation_deactivated_without_settlement), a hold that ended it (v4.1.2+:
--   escrow_hold_expired / escrow_hold_unrecoverable); the last of the request-path and
--   low-balance lines too (a hold may have answered the first: gateway-logs.md 14.2); an epoch
--   retention retirement (escrow_epoch_retention_retire, runtime_retired "epoch retention
--   prune": creation epoch, current epoch, cutoff; escrow_storage_pruned); its replacement
--   (escrow_depletion_replacement_created) or the skipped one
--   (escrow_depletion_replacement_skipped: reason, target); its settlement; accounting's
--   latest nonce.
-- NULL means the line is not in the logs read (or the source was not collected).
-- Reads: log_escrow_events, log_escrow_retirements, log_events, chain_escrows, acct_escrow_nonces.
WITH
ids AS (
    SELECT escrow AS id FROM log_events WHERE escrow IS NOT NULL
    UNION SELECT new_escrow FROM log_escrow_events WHERE new_escrow IS NOT NULL
    UNION SELECT escrow FROM log_escrow_events WHERE escrow IS NOT NULL
    UNION SELECT TRY_CAST(escrow_id AS BIGINT) FROM acct_escrow_nonces
    UNION SELECT escrow_id FROM chain_escrows WHERE found
),
seen AS (
    SELECT escrow AS id, min(ts) AS first_seen, max(ts) AS last_seen, count(*) AS log_lines
    FROM log_events WHERE escrow IS NOT NULL GROUP BY escrow
),
escrow_lines AS (   -- pos: the order of lines logged at one time (file, then line)
    SELECT *, file_id::BIGINT * 1000000000000 + line_no AS pos FROM log_escrow_events
),
ev AS (
    SELECT escrow AS id,
        min(ts) FILTER (WHERE event = 'escrow_rotation_created')                    AS minted_at,
        first(role ORDER BY ts, pos) FILTER (WHERE event = 'escrow_rotation_created')    AS role,
        first(epoch ORDER BY ts, pos) FILTER (WHERE event = 'escrow_rotation_created')   AS log_epoch,
        first(model ORDER BY ts, pos) FILTER (WHERE event = 'escrow_rotation_created')   AS log_model,
        first(tx_hash ORDER BY ts, pos) FILTER (WHERE event = 'escrow_rotation_created') AS mint_tx,
        min(ts) FILTER (WHERE event = 'escrow_depletion_deactivated')               AS deactivated_at,
        first(reason ORDER BY ts, pos) FILTER (WHERE event = 'escrow_depletion_deactivated') AS deactivation_reason,
        first(settlement_due ORDER BY ts, pos) FILTER (WHERE event = 'escrow_depletion_deactivated') AS settlement_due,
        first(deactivated_in_store ORDER BY ts, pos) FILTER (WHERE event = 'escrow_depletion_deactivated') AS deactivated_in_store,
        min(ts) FILTER (WHERE event = 'devshard_deactivated')                       AS devshard_deactivated_at,
        first(reason ORDER BY ts, pos) FILTER (WHERE event = 'devshard_deactivated')     AS devshard_deactivated_reason,
        min(ts) FILTER (WHERE event = 'runtime_retired' AND coalesce(reason, '') <> 'settled') AS retired_at,
        first(reason ORDER BY ts, pos) FILTER (WHERE event = 'runtime_retired' AND coalesce(reason, '') <> 'settled') AS retired_reason,
        min(ts) FILTER (WHERE event = 'escrow_balance_exhausted')                   AS exhausted_at,
        min(ts) FILTER (WHERE event = 'gateway_replacing_exhausted_escrow')         AS replacing_at,
        min(ts) FILTER (WHERE event = 'escrow_balance_low')                         AS low_at,
        max(ts) FILTER (WHERE event = 'escrow_balance_exhausted')                   AS last_exhausted_at,
        max(ts) FILTER (WHERE event = 'gateway_replacing_exhausted_escrow')         AS last_replacing_at,
        max(ts) FILTER (WHERE event = 'escrow_balance_low')                         AS last_low_at,
        first(balance ORDER BY ts, pos) FILTER (WHERE event = 'escrow_balance_low')      AS low_balance,
        first(threshold ORDER BY ts, pos) FILTER (WHERE event = 'escrow_balance_low')    AS low_threshold,
        min(ts) FILTER (WHERE event = 'escrow_nonce_high')                          AS nonce_high_at,
        first(nonce ORDER BY ts, pos) FILTER (WHERE event = 'escrow_nonce_high')         AS nonce_high,
        first(nonce_limit ORDER BY ts, pos) FILTER (WHERE event = 'escrow_nonce_high')   AS nonce_limit,
        min(ts) FILTER (WHERE event LIKE 'escrow\_rotation\_settling%' ESCAPE '\'
                           OR event = 'escrow_rotation_deactivated_without_settlement') AS rotation_retired_at,
        first(event || coalesce(' reason="' || reason || '"', '') ORDER BY ts, pos)
            FILTER (WHERE event LIKE 'escrow\_rotation\_settling%' ESCAPE '\'
                       OR event = 'escrow_rotation_deactivated_without_settlement') AS rotation_retired_line,
        first(reason ORDER BY ts, pos)
            FILTER (WHERE (event LIKE 'escrow\_rotation\_settling%' ESCAPE '\'
                           OR event = 'escrow_rotation_deactivated_without_settlement')
                      AND reason IS NOT NULL)                                       AS rotation_reason,
        min(ts) FILTER (WHERE event IN ('escrow_hold_expired', 'escrow_hold_unrecoverable')) AS hold_end_at,
        first(event ORDER BY ts, pos) FILTER (WHERE event IN ('escrow_hold_expired', 'escrow_hold_unrecoverable')) AS hold_end_event,
        min(ts) FILTER (WHERE event IN ('auto_settle_confirmed', 'devshard_settle_confirmed')) AS settled_at,
        count(*) FILTER (WHERE insufficient_balance)                                AS insufficient_failures
    FROM escrow_lines
    WHERE escrow IS NOT NULL
    GROUP BY escrow
),
repl AS (
    SELECT escrow AS id,
        min(ts) AS replaced_at,
        first(new_escrow ORDER BY ts, pos) AS replacement_escrow,
        first(reason ORDER BY ts, pos) AS replacement_reason,
        first(tx_hash ORDER BY ts, pos) AS replacement_tx,
        first(model ORDER BY ts, pos) AS repl_model
    FROM escrow_lines
    WHERE event = 'escrow_depletion_replacement_created'
    GROUP BY escrow
),
replaces AS (   -- the escrow this one was minted to replace
    SELECT new_escrow AS id, first(escrow ORDER BY ts, pos) AS replaces_escrow, first(model ORDER BY ts, pos) AS new_model
    FROM escrow_lines
    WHERE event = 'escrow_depletion_replacement_created' AND new_escrow IS NOT NULL
    GROUP BY new_escrow
),
retire AS (    -- retention retirements, and skipped replacements (log_escrow_retirements.sql)
    SELECT escrow AS id,
        min(ts) FILTER (WHERE event IN ('escrow_epoch_retention_retire', 'runtime_retired')) AS retention_at,
        first(creation_epoch ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_epoch_retention_retire')                  AS retention_creation_epoch,
        first(current_epoch ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_epoch_retention_retire')                  AS retention_current_epoch,
        first(cutoff ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_epoch_retention_retire')                  AS retention_cutoff,
        min(ts) FILTER (WHERE event = 'escrow_storage_pruned')                      AS storage_pruned_at,
        min(ts) FILTER (WHERE event = 'escrow_depletion_replacement_skipped')       AS skipped_at,
        first(reason ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_depletion_replacement_skipped')           AS skip_reason,
        first(target ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_depletion_replacement_skipped')           AS skip_target,
        first(model ORDER BY ts, file_id, line_no)
            FILTER (WHERE event = 'escrow_depletion_replacement_skipped')           AS skip_model
    FROM log_escrow_retirements WHERE escrow IS NOT NULL GROUP BY escrow
),
req_model AS (
    SELECT escrow AS id, first(model ORDER BY first_ts, request) AS model
    FROM log_requests WHERE escrow IS NOT NULL AND model IS NOT NULL GROUP BY escrow
),
acct AS (
    SELECT TRY_CAST(escrow_id AS BIGINT) AS id, max(epoch) AS acct_epoch,
           max(nullif(model, '')) AS acct_model,           -- one model an escrow; the same pick each run
           max(latest_nonce) AS acct_latest_nonce, max(phase) AS acct_phase
    FROM acct_escrow_nonces GROUP BY 1
)
SELECT
    ids.id AS escrow,
    coalesce(nullif(c.model_id, ''), ev.log_model, repl.repl_model, replaces.new_model, rm.model, acct.acct_model,
             retire.skip_model) AS model,
    coalesce(CAST(c.epoch_index AS BIGINT), ev.log_epoch, acct.acct_epoch) AS creation_epoch,
    CASE WHEN c.epoch_index IS NOT NULL THEN 'chain devshard_escrow record'
         WHEN ev.log_epoch IS NOT NULL THEN 'escrow_rotation_created line'
         WHEN acct.acct_epoch IS NOT NULL THEN 'accounting API (creation epoch)' END AS epoch_source,
    ev.minted_at, ev.role, ev.mint_tx, replaces.replaces_escrow,
    c.escrow_id IS NOT NULL AS chain_probed, c.found AS chain_found, c.amount, c.token_price,
    c.settled AS chain_settled, c.creator,
    seen.first_seen, seen.last_seen, coalesce(seen.log_lines, 0) AS log_lines,
    ev.deactivated_at, ev.deactivation_reason, ev.settlement_due, ev.deactivated_in_store,
    ev.devshard_deactivated_at, ev.devshard_deactivated_reason, ev.retired_at, ev.retired_reason,
    ev.exhausted_at, ev.replacing_at, ev.low_at, ev.low_balance, ev.low_threshold,
    ev.last_exhausted_at, ev.last_replacing_at, ev.last_low_at,
    retire.retention_at, retire.retention_creation_epoch, retire.retention_current_epoch, retire.retention_cutoff,
    retire.storage_pruned_at, retire.skipped_at, retire.skip_reason, retire.skip_target,
    ev.nonce_high_at, ev.nonce_high, ev.nonce_limit, ev.rotation_retired_at, ev.rotation_retired_line, ev.rotation_reason,
    ev.hold_end_at, ev.hold_end_event, ev.settled_at, coalesce(ev.insufficient_failures, 0) AS insufficient_failures,
    repl.replaced_at, repl.replacement_escrow, repl.replacement_reason, repl.replacement_tx,
    acct.acct_epoch, acct.acct_latest_nonce, acct.acct_phase
FROM ids
LEFT JOIN chain_escrows c ON c.escrow_id = ids.id
LEFT JOIN seen ON seen.id = ids.id
LEFT JOIN ev ON ev.id = ids.id
LEFT JOIN repl ON repl.id = ids.id
LEFT JOIN replaces ON replaces.id = ids.id
LEFT JOIN req_model rm ON rm.id = ids.id
LEFT JOIN acct ON acct.id = ids.id
LEFT JOIN retire ON retire.id = ids.id
WHERE ids.id IS NOT NULL
ORDER BY ids.id;
