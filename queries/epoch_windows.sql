-- Wall-clock windows of epoch $epoch that gateway evidence must cover: the epoch's
-- effective span [SNV(N), SNV(N+1)) and each confirmation PoC [trigger, val_end].
-- start_time / end_time are NULL when the boundary's block time was not collected.
-- Reads: chain_epochs, chain_cpoc_events, chain_block_times.
SELECT 'epoch' AS window, e.effective_height AS start_height, e.next_effective_height AS end_height,
       s.time AS start_time, t.time AS end_time
FROM chain_epochs e
LEFT JOIN chain_block_times s ON s.height = e.effective_height
LEFT JOIN chain_block_times t ON t.height = e.next_effective_height
WHERE e.epoch = $epoch
UNION ALL
SELECT 'cpoc:' || c.event_sequence, c.trigger_height, c.val_end, s.time, t.time
FROM chain_cpoc_events c
LEFT JOIN chain_block_times s ON s.height = c.trigger_height
LEFT JOIN chain_block_times t ON t.height = c.val_end
WHERE c.epoch = $epoch
ORDER BY start_height;
