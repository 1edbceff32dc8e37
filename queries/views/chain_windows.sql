-- chain_windows: the wall-clock windows of every stored epoch that gateway evidence must
-- cover: the epoch's effective span [SNV(N), SNV(N+1)) ('epoch') and each confirmation PoC
-- window ('cpoc:<seq>', defined in views/cpoc_windows.sql). start_time / end_time are NULL
-- when the boundary's block time was not collected.
-- Reads: chain_epochs, chain_block_times, cpoc_windows.
CREATE OR REPLACE VIEW chain_windows AS
SELECT e.epoch, 'epoch' AS window, e.effective_height AS start_height, e.next_effective_height AS end_height,
       s.time AS start_time, t.time AS end_time
FROM chain_epochs e
LEFT JOIN chain_block_times s ON s.height = e.effective_height
LEFT JOIN chain_block_times t ON t.height = e.next_effective_height
UNION ALL
SELECT epoch, "window", start_height, end_height, start_time, end_time
FROM cpoc_windows;
