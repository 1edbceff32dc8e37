-- Epoch models: each model of epoch $epoch with its subgroup weight, its raw PoC
-- weight W_m (sum of ml_nodes poc_weight), and the chain's preserved-weight target
-- trunc(poc_slot_allocation x W_m) with the allocation in force during the epoch.
-- Reads: chain_epoch_models, chain_slot_allocation.
SELECT m.model_id,
       m.total_weight,
       m.poc_weight_sum                                   AS w_m,
       m.members,
       m.nodes,
       m.weight_scale_factor,
       p.poc_slot_allocation,
       CAST(trunc(p.poc_slot_allocation * m.poc_weight_sum) AS HUGEINT) AS preserved_target
FROM chain_epoch_models m
LEFT JOIN chain_slot_allocation p ON p.epoch = m.epoch
WHERE m.epoch = $epoch
ORDER BY m.model_id;
