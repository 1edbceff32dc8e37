-- remints_escrows_to_probe: which devshard escrow ids to probe with GET devshard_escrow/{id}
-- (chain-api.md 12.3, 12.6: there is no list query, so the ids come from what the gateway
-- logged and what its accounting API reported), and the epoch each is known under.
--
-- Answers: one row per escrow id seen in the logs (log_events.escrow, and the old/new ids
-- of the lifecycle lines in log_escrow_events) or in accounting (acct_escrow_nonces,
-- acct_counters, acct_slots), that still needs probing:
--   * an escrow stored as settled never changes again: not probed (cached);
--   * an escrow stored as found = false below the largest id found on chain existed once
--     (ids are sequential) and was pruned: it never comes back, not probed again;
--   * everything else (never probed, found but not settled, failed, not found above the
--     largest found id) is probed.
-- hint_epoch: the creation epoch the logs (escrow_rotation_created epoch=) or accounting
-- (the record's epoch = the escrow's creation epoch) give, for the coverage rows; NULL if none.
-- Reads: log_events, log_escrow_events, acct_escrow_nonces, acct_counters, acct_slots,
--        chain_escrows.
WITH seen AS (
    SELECT escrow AS id, NULL::BIGINT AS epoch FROM log_events WHERE escrow IS NOT NULL
    UNION ALL
    SELECT escrow, CASE WHEN event = 'escrow_rotation_created' THEN epoch END
    FROM log_escrow_events WHERE escrow IS NOT NULL
    UNION ALL
    SELECT new_escrow, NULL FROM log_escrow_events WHERE new_escrow IS NOT NULL
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch FROM acct_escrow_nonces
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch FROM acct_counters
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch FROM acct_slots
),
ids AS (
    SELECT id, max(epoch) AS hint_epoch
    FROM seen
    WHERE id IS NOT NULL AND id > 0
    GROUP BY id
),
top AS (SELECT max(escrow_id) AS max_found FROM chain_escrows WHERE found)
SELECT ids.id AS escrow_id, ids.hint_epoch
FROM ids
LEFT JOIN chain_escrows c ON c.escrow_id = ids.id
CROSS JOIN top
WHERE c.escrow_id IS NULL
   OR NOT (coalesce(c.settled, false)
           OR (NOT c.found AND top.max_found IS NOT NULL AND c.escrow_id < top.max_found))
ORDER BY ids.id;
