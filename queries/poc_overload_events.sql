-- poc_overload_events: every confirmation PoC event of epoch $epoch with its window in
-- heights and in wall-clock time (chain-api.md section 6): [trigger, val_end] is the span
-- the gateway treats as "PoC blocking" (relaxed mode: only preserved hosts get real
-- requests); [trigger, gen_end] is "PoC generation" (grace + generation), where the
-- gateway's PoC concurrency budget, and the proposed per-host cap, apply.
-- A *_time is NULL when that height's block time was not collected.
-- Reads: chain_cpoc_events, chain_block_times, chain_params (purpose 'epoch').
SELECT c.event_sequence,
       'cpoc:' || c.event_sequence AS episode,
       c.trigger_height, c.gen_start, c.gen_end, c.val_start, c.val_end,
       tt.time AS trigger_time,
       gs.time AS gen_start_time,
       ge.time AS gen_end_time,
       ve.time AS val_end_time,
       p.poc_slot_allocation,
       c.epoch AS epoch_index
FROM chain_cpoc_events c
LEFT JOIN chain_block_times tt ON tt.height = c.trigger_height
LEFT JOIN chain_block_times gs ON gs.height = c.gen_start
LEFT JOIN chain_block_times ge ON ge.height = c.gen_end
LEFT JOIN chain_block_times ve ON ve.height = c.val_end
LEFT JOIN chain_params p ON p.epoch = c.epoch AND p.purpose = 'epoch'
WHERE c.epoch = $epoch
ORDER BY c.event_sequence;
