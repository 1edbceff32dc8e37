-- cpoc_windows: the one definition of a confirmation PoC window. One row per cPoC event of
-- every stored epoch (chain_cpoc_events; heights computed from the epoch's params at
-- collection, chain-api.md section 6), named 'cpoc:<seq>', with the block time of each of
-- its heights (NULL when that block time was not collected).
--   the window       [trigger, val_end] (start_height .. end_height, start_time .. end_time):
--                    "PoC blocking", only preserved hosts get real requests (relaxed mode)
--   grace            [trigger, gen_start)
--   generation       [gen_start, gen_end]; [trigger, gen_end] is where the gateway's PoC
--                    concurrency budget, and the proposed per-host cap, apply
--   validation       [val_start, val_end]
-- Every edge is in its phase: membership of the window and of each phase is closed, the one
-- rule of views/in_cpoc_window.sql (in_cpoc_window, overlaps_cpoc_window), which every query
-- and the poc-overload chart's phases follow.
-- Times are the stored TIMESTAMPTZ (microseconds); the chain's nanosecond text stays in
-- chain_block_times.time_text as provenance.
-- Reads: chain_cpoc_events, chain_block_times.
CREATE OR REPLACE VIEW cpoc_windows AS
SELECT c.epoch, c.event_sequence, 'cpoc:' || c.event_sequence AS "window", c.phase,
       c.trigger_height, c.gen_start, c.gen_end, c.val_start, c.val_end,
       tt.time AS trigger_time, gs.time AS gen_start_time, ge.time AS gen_end_time,
       vs.time AS val_start_time, ve.time AS val_end_time,
       c.trigger_height AS start_height, c.val_end AS end_height,
       tt.time AS start_time, ve.time AS end_time
FROM chain_cpoc_events c
LEFT JOIN chain_block_times tt ON tt.height = c.trigger_height
LEFT JOIN chain_block_times gs ON gs.height = c.gen_start
LEFT JOIN chain_block_times ge ON ge.height = c.gen_end
LEFT JOIN chain_block_times vs ON vs.height = c.val_start
LEFT JOIN chain_block_times ve ON ve.height = c.val_end;
