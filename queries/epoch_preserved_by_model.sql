-- Preserved weight per episode and model of epoch $epoch against the chain's
-- target trunc(poc_slot_allocation x W_m): how many participants and nodes were
-- preserved, the weight achieved, and achieved/target. NULL where a weight is unknown.
-- Reads: chain_preserved_nodes, chain_ml_nodes, chain_epoch_models, chain_slot_allocation.
WITH nodes AS (
    SELECT p.episode, p.anchor_height, p.model_id, p.participant, n.poc_weight
    FROM chain_preserved_nodes p
    LEFT JOIN chain_ml_nodes n
           ON n.epoch = p.epoch AND n.model_id = p.model_id
          AND n.participant = p.participant AND n.node_id = p.node_id
    WHERE p.epoch = $epoch
)
SELECT n.episode,
       n.anchor_height,
       n.model_id,
       count(DISTINCT n.participant)                                        AS participants,
       count(*)                                                            AS nodes,
       CASE WHEN count(n.poc_weight) = count(*) THEN sum(n.poc_weight) END AS achieved_weight,
       CAST(trunc(pa.poc_slot_allocation * m.poc_weight_sum) AS HUGEINT)   AS target_weight,
       m.poc_weight_sum                                                    AS w_m,
       round(CASE WHEN count(n.poc_weight) = count(*) AND m.poc_weight_sum > 0
             THEN sum(n.poc_weight) / m.poc_weight_sum END, 4)             AS achieved_share
FROM nodes n
LEFT JOIN chain_epoch_models m ON m.epoch = $epoch AND m.model_id = n.model_id
LEFT JOIN chain_slot_allocation pa ON pa.epoch = $epoch
GROUP BY n.episode, n.anchor_height, n.model_id, m.poc_weight_sum, pa.poc_slot_allocation
ORDER BY n.anchor_height, n.model_id;
