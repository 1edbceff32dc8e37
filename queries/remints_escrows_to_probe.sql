-- remints_escrows_to_probe: which devshard escrow ids to probe with GET devshard_escrow/{id}
-- (chain-api.md 12.3, 12.6: there is no list query, so the ids come from what the gateway
-- logged and what its accounting API reported), the epoch each is known under, and the
-- height at which a pruned record can still be read.
--
-- Answers: one row per escrow id seen in the logs (log_events.escrow, and the old/new ids
-- of the lifecycle lines in log_escrow_events) or in accounting (acct_escrow_nonces,
-- acct_counters, acct_slots), that still needs probing:
--   * an escrow stored as settled never changes again: not probed (cached);
--   * an escrow stored as found = false below the largest id found on chain existed once
--     (ids are sequential) and was pruned: not probed again, unless a read pinned at its
--     epoch's settlement height is possible and was not done yet (pin_height below);
--   * everything else (never probed, found but not settled, a failed probe, not found above
--     the largest found id) is probed.
-- hint_epoch: the creation epoch the logs (escrow_rotation_created epoch=) or accounting
-- (the record's epoch = the escrow's creation epoch) give; NULL if none.
-- pin_height: V(E+1), the settlement height of that epoch E when the store has it: every
-- escrow of E exists at that height (created during E, pruned from E+2 on), so an archive
-- node answers for it there with x-cosmos-block-height.
-- tried_pinned: a found = false row that came from such a pinned read.
-- Reads: log_events, log_escrow_events, acct_escrow_nonces, acct_counters, acct_slots,
--        chain_escrows, chain_epochs, coverage.
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
top AS (SELECT max(escrow_id) AS max_found FROM chain_escrows WHERE found),
failed AS (
    SELECT DISTINCT item FROM coverage WHERE source = 'chain_escrows' AND status <> 'ok'
)
SELECT ids.id AS escrow_id, ids.hint_epoch, e.settlement_height AS pin_height,
       coalesce(NOT c.found AND c.height IS NOT NULL, false) AS tried_pinned
FROM ids
LEFT JOIN chain_escrows c ON c.escrow_id = ids.id
LEFT JOIN chain_epochs e ON e.epoch = ids.hint_epoch
LEFT JOIN failed f ON f.item = 'devshard_escrow/' || ids.id
CROSS JOIN top
WHERE c.escrow_id IS NULL
   OR f.item IS NOT NULL
   OR NOT (coalesce(c.settled, false)
           OR (NOT c.found AND top.max_found IS NOT NULL AND c.escrow_id < top.max_found
               AND (c.height IS NOT NULL OR e.settlement_height IS NULL)))
ORDER BY ids.id;
