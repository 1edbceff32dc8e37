-- Confirmation PoC events of epoch $epoch with their grace, generation and
-- validation windows (heights computed from the epoch params) and block times.
-- Reads: chain_cpoc_events, chain_block_times.
SELECT e.event_sequence,
       e.phase,
       e.trigger_height,
       e.gen_start,
       e.gen_end,
       e.val_start,
       e.val_end,
       t0.time_text AS trigger_time,
       t1.time_text AS gen_start_time,
       t2.time_text AS gen_end_time,
       t3.time_text AS val_start_time,
       t4.time_text AS val_end_time
FROM chain_cpoc_events e
LEFT JOIN chain_block_times t0 ON t0.height = e.trigger_height
LEFT JOIN chain_block_times t1 ON t1.height = e.gen_start
LEFT JOIN chain_block_times t2 ON t2.height = e.gen_end
LEFT JOIN chain_block_times t3 ON t3.height = e.val_start
LEFT JOIN chain_block_times t4 ON t4.height = e.val_end
WHERE e.epoch = $epoch
ORDER BY e.event_sequence;
