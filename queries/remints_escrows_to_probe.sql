-- remints_escrows_to_probe: which devshard escrow ids to probe with GET devshard_escrow/{id}
-- (chain-api.md 12.3, 12.6: there is no list query, so the ids come from what the gateway
-- logged and what its accounting API reported), the epoch each is known under, and the
-- height at which a pruned record can still be read; in the order to ask them.
--
-- Answers: one row per escrow id seen in the logs (log_events.escrow, and the old/new ids
-- of the lifecycle lines in log_escrow_events) or in accounting (acct_escrow_nonces,
-- acct_counters, acct_slots), that still needs probing:
--   * an escrow stored as settled never changes again: not probed (cached);
--   * an escrow stored as found = false below the largest id found on chain existed once
--     (ids are sequential) and was pruned: not probed again, unless a read pinned at its
--     epoch's settlement height is possible and was not done yet (pin_height below);
--   * everything else (never probed, found but not settled, a failed probe, not found above
--     the largest found id) is probed, once its wait (escrow_probes.next_at) is over.
-- Only the ids tied to the epochs collected ($epochs; NULL: every epoch): an accounting
-- record of one of them (its epoch is the escrow's creation epoch), the mint line
-- (escrow_rotation_created epoch=), or log lines about the id within one of those epochs'
-- time spans [S(E), S(E+1)) (chain_epoch_heights, chain_block_times). An id only the logs
-- name, of no known epoch, in lines without times or while those spans are unknown, is
-- probed too: the logs are the gateway's own. So ids an accounting API names for other
-- epochs, and ids logged only outside the epochs' spans, are not asked for these.
-- hint_epoch: the creation epoch the logs (escrow_rotation_created epoch=) or accounting
-- (the record's epoch = the escrow's creation epoch) give; NULL if none.
-- pin_height: V(E+1), the settlement height of that epoch E when the store has it: every
-- escrow of E exists at that height (created during E, pruned from E+2 on), so an archive
-- node answers for it there with x-cosmos-block-height.
-- tried_pinned: a found = false row that came from such a pinned read.
-- asked_before: the id was probed in an earlier run (escrow_probes); ids never asked come first.
-- Reads: log_events, log_escrow_events, acct_escrow_nonces, acct_counters, acct_slots,
--        chain_escrows, chain_epochs, chain_epoch_heights, chain_block_times, escrow_probes,
--        coverage. Parameters: $epochs (BIGINT[] or NULL), $now (TIMESTAMPTZ).
WITH seen AS (
    SELECT escrow AS id, NULL::BIGINT AS epoch, ts, true AS logged FROM log_events WHERE escrow IS NOT NULL
    UNION ALL
    SELECT escrow, CASE WHEN event = 'escrow_rotation_created' THEN epoch END, ts, true
    FROM log_escrow_events WHERE escrow IS NOT NULL
    UNION ALL
    SELECT new_escrow, NULL, ts, true FROM log_escrow_events WHERE new_escrow IS NOT NULL
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch, NULL, false FROM acct_escrow_nonces
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch, NULL, false FROM acct_counters
    UNION ALL
    SELECT TRY_CAST(escrow_id AS BIGINT), epoch, NULL, false FROM acct_slots
),
ids AS (
    SELECT id, max(epoch) AS hint_epoch,
           bool_or(list_contains($epochs::BIGINT[], epoch)) AS named_for_epoch,
           min(ts) FILTER (WHERE logged) AS first_ts, max(ts) FILTER (WHERE logged) AS last_ts,
           bool_or(logged) AS logged
    FROM seen
    WHERE id IS NOT NULL AND id > 0
    GROUP BY id
),
spans AS (   -- the time span of each epoch collected, where its block times are stored
    SELECT s.epoch, bs.time AS start_at, bn.time AS end_at
    FROM chain_epoch_heights s
    JOIN chain_block_times bs ON bs.height = s.height
    LEFT JOIN chain_epoch_heights n ON n.epoch = s.epoch AND n.name = 'S(N+1)'
    LEFT JOIN chain_block_times bn ON bn.height = n.height
    WHERE s.name = 'S(N)' AND list_contains($epochs::BIGINT[], s.epoch)
),
tied AS (
    SELECT ids.* FROM ids
    WHERE $epochs::BIGINT[] IS NULL
       OR named_for_epoch
       OR EXISTS (SELECT 1 FROM spans sp
                  WHERE ids.last_ts >= sp.start_at AND (sp.end_at IS NULL OR ids.first_ts < sp.end_at))
       OR (logged AND hint_epoch IS NULL AND (first_ts IS NULL OR (SELECT count(*) FROM spans) = 0))
),
top AS (SELECT max(escrow_id) AS max_found FROM chain_escrows WHERE found),
failed AS (
    SELECT DISTINCT item FROM coverage WHERE source = 'chain_escrows' AND status <> 'ok'
)
SELECT tied.id AS escrow_id, tied.hint_epoch, e.settlement_height AS pin_height,
       coalesce(NOT c.found AND c.height IS NOT NULL, false) AS tried_pinned,
       p.escrow_id IS NOT NULL AS asked_before
FROM tied
LEFT JOIN chain_escrows c ON c.escrow_id = tied.id
LEFT JOIN chain_epochs e ON e.epoch = tied.hint_epoch
LEFT JOIN failed f ON f.item = 'devshard_escrow/' || tied.id
LEFT JOIN escrow_probes p ON p.escrow_id = tied.id
CROSS JOIN top
WHERE (c.escrow_id IS NULL
       OR f.item IS NOT NULL
       OR NOT (coalesce(c.settled, false)
               OR (NOT c.found AND top.max_found IS NOT NULL AND c.escrow_id < top.max_found
                   AND (c.height IS NOT NULL OR e.settlement_height IS NULL))))
  AND (p.next_at IS NULL OR p.next_at <= $now::TIMESTAMPTZ)
ORDER BY asked_before, p.last_at NULLS FIRST, tied.id;
