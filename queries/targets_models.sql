-- targets_models: per model of epoch $epoch, what the chain's preserved-weight target is
-- made of: W_m (sum of the model's node poc_weight, raw model units), the subgroup total
-- weight, poc_slot_allocation in force (views/chain_slot_allocation.sql; NULL when the
-- params were not collected, and then 0.5 is assumed for the target, and said) and the
-- chain's target trunc(poc_slot_allocation x W_m).
-- Reads: chain_epoch_models, chain_slot_allocation.
SELECT m.model_id, m.poc_weight_sum AS w_m, m.total_weight, m.members, m.nodes,
       m.weight_scale_factor, p.poc_slot_allocation,
       CAST(trunc(coalesce(p.poc_slot_allocation, 0.5) * m.poc_weight_sum) AS HUGEINT) AS allocation_target
FROM chain_epoch_models m
LEFT JOIN chain_slot_allocation p ON p.epoch = m.epoch
WHERE m.epoch = $epoch
ORDER BY m.model_id;
