-- Epoch heights: the named boundary heights of epoch $epoch (PoC stages, settlement,
-- CPoC windows) in height order, with their block times where collected.
-- Reads: chain_epoch_heights, chain_block_times.
SELECT h.name,
       h.height,
       bt.time_text AS time
FROM chain_epoch_heights h
LEFT JOIN chain_block_times bt USING (height)
WHERE h.epoch = $epoch
ORDER BY h.height, h.name;
