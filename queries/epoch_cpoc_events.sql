-- Confirmation PoC events of epoch $epoch with their grace, generation and validation
-- windows in heights and block times (definitions: views/cpoc_windows.sql).
-- Reads: cpoc_windows.
SELECT event_sequence, phase, trigger_height, gen_start, gen_end, val_start, val_end,
       trigger_time, gen_start_time, gen_end_time, val_start_time, val_end_time
FROM cpoc_windows
WHERE epoch = $epoch
ORDER BY event_sequence;
