-- poc_overload_preserved_hosts: the preserved hosts of each confirmation PoC episode
-- ('cpoc:<seq>', anchor = trigger height) of epoch $epoch, per model and participant: the
-- preserved node ids and their poc_weight, the participant's weight in the model subgroup
-- (the weight the gateway's per-weight budget reads, and the proposed per-host cap), the
-- subgroup's total weight, and W_m (sum of the model's node poc_weight).
-- weight is NULL when the subgroup's validation weights were not collected.
-- Reads: chain_preserved_nodes, chain_ml_nodes, chain_validation_weights, chain_epoch_models.
WITH pres AS (
    SELECT p.episode, p.anchor_height, p.model_id, p.participant,
           list(p.node_id ORDER BY p.node_id)               AS node_ids,
           count(*)                                          AS nodes,
           CASE WHEN count(n.poc_weight) = count(*) THEN sum(n.poc_weight) END AS preserved_weight
    FROM chain_preserved_nodes p
    LEFT JOIN chain_ml_nodes n ON n.epoch = p.epoch AND n.model_id = p.model_id
                              AND n.participant = p.participant AND n.node_id = p.node_id
    WHERE p.epoch = $epoch AND p.episode LIKE 'cpoc:%'
    GROUP BY ALL
)
SELECT pres.*,
       vw.weight                AS weight,
       m.total_weight           AS model_total_weight,
       m.poc_weight_sum         AS w_m
FROM pres
LEFT JOIN chain_validation_weights vw ON vw.epoch = $epoch AND vw.model_id = pres.model_id
                                     AND vw.participant = pres.participant
LEFT JOIN chain_epoch_models m ON m.epoch = $epoch AND m.model_id = pres.model_id
ORDER BY pres.anchor_height, pres.model_id, vw.weight NULLS LAST, pres.participant;
