-- poc_overload_events: every confirmation PoC event of epoch $epoch with its window in
-- heights and in wall-clock time (definitions: views/cpoc_windows.sql): [trigger, val_end]
-- is the span the gateway treats as "PoC blocking" (relaxed mode: only preserved hosts get
-- real requests); [trigger, gen_end] is "PoC generation" (grace + generation), where the
-- gateway's PoC concurrency budget, and the proposed per-host cap, apply; with the
-- poc_slot_allocation in force. A *_time is NULL when that height's block time was not
-- collected. The epoch report's cpoc_events section shows these same rows.
-- Reads: cpoc_windows, chain_params (purpose 'epoch').
SELECT c.event_sequence, c."window" AS episode, c.phase,
       c.trigger_height, c.gen_start, c.gen_end, c.val_start, c.val_end,
       c.trigger_time, c.gen_start_time, c.gen_end_time, c.val_start_time, c.val_end_time,
       p.poc_slot_allocation,
       c.epoch AS epoch_index
FROM cpoc_windows c
LEFT JOIN chain_params p ON p.epoch = c.epoch AND p.purpose = 'epoch'
WHERE c.epoch = $epoch
ORDER BY c.event_sequence;
