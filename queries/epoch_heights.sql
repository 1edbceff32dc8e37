-- Epoch heights: the named boundary heights of epoch $epoch (PoC stages, settlement,
-- CPoC windows) in height order, with their block times where collected (the stored
-- TIMESTAMPTZ; the chain's nanosecond text stays in chain_block_times.time_text).
-- Reads: chain_epoch_heights, chain_block_times.
SELECT h.name,
       h.height,
       bt.time
FROM chain_epoch_heights h
LEFT JOIN chain_block_times bt USING (height)
WHERE h.epoch = $epoch
ORDER BY h.height, h.name;
