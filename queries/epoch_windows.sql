-- The windows of epoch $epoch that gateway evidence must cover (see views/chain_windows.sql).
-- Reads: chain_windows.
SELECT "window", start_height, end_height, start_time, end_time
FROM chain_windows
WHERE epoch = $epoch
ORDER BY start_height;
