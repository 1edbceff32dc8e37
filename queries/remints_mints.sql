-- remints_mints: every escrow mint the logs show, and whether it was a depletion replacement
-- (gateway-logs.md 6.2, 6.4: an escrow_rotation_created followed by an
-- escrow_depletion_replacement_created with the same tx hash or escrow is a depletion mint;
-- a lone escrow_rotation_created is the rotator: its epoch-start pass or target_count
-- reconciliation). A replacement line whose creation line is not in the logs still counts.
--
-- Answers, per minted escrow: time, model, role, the epoch it was minted for (the line's
-- epoch, else its chain record's creation epoch), tx hash, for replacements the escrow
-- it replaced and the reason logged, and whether it was a hold's top-up (gateway v4.1.2+:
-- escrow_hold_top_up_created, an extra escrow minted while escrows of its model are held,
-- gateway-logs.md 14.2; the top-up line alone counts as the mint too).
-- Reads: log_escrow_events, chain_escrows.
-- The facts of a mint are its first line's: by time, then (a tie) by place in the logs.
WITH created AS (
    SELECT escrow, min(ts) AS ts,
           first(role ORDER BY ts, file_id, line_no) AS role,
           first(epoch ORDER BY ts, file_id, line_no) AS epoch,
           first(model ORDER BY ts, file_id, line_no) AS model,
           first(tx_hash ORDER BY ts, file_id, line_no) FILTER (WHERE event = 'escrow_rotation_created') AS tx_hash,
           bool_or(event = 'escrow_rotation_created') AS creation_line,
           bool_or(event = 'escrow_hold_top_up_created') AS hold_top_up
    FROM log_escrow_events
    WHERE event IN ('escrow_rotation_created', 'escrow_hold_top_up_created') AND escrow IS NOT NULL
    GROUP BY escrow
),
repl AS (
    SELECT new_escrow AS escrow, min(ts) AS ts,
           first(escrow ORDER BY ts, file_id, line_no) AS replaces_escrow,
           first(reason ORDER BY ts, file_id, line_no) AS reason,
           first(model ORDER BY ts, file_id, line_no) AS model,
           first(tx_hash ORDER BY ts, file_id, line_no) AS tx_hash
    FROM log_escrow_events WHERE event = 'escrow_depletion_replacement_created' AND new_escrow IS NOT NULL
    GROUP BY new_escrow
)
SELECT coalesce(c.escrow, r.escrow) AS escrow,
       coalesce(c.ts, r.ts) AS ts,
       coalesce(c.model, r.model, nullif(ch.model_id, '')) AS model,
       c.role,
       coalesce(c.epoch, CAST(ch.epoch_index AS BIGINT)) AS epoch,
       coalesce(c.tx_hash, r.tx_hash) AS tx_hash,
       r.replaces_escrow,
       r.reason AS replacement_reason,
       coalesce(c.creation_line, false) AS creation_line,
       ch.amount,
       coalesce(c.hold_top_up, false) AS hold_top_up
FROM created c
FULL OUTER JOIN repl r ON r.escrow = c.escrow
LEFT JOIN chain_escrows ch ON ch.escrow_id = coalesce(c.escrow, r.escrow) AND ch.found
ORDER BY ts, escrow;
