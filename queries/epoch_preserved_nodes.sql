-- Preserved nodes of each PoC episode of epoch $epoch (of one participant when
-- $participant is not NULL): per episode, model and
-- participant, the preserved node ids and their raw PoC weight (from the model
-- subgroup's ml_nodes; NULL when the node is not in the collected group data).
-- Reads: chain_preserved_nodes, chain_ml_nodes.
SELECT p.episode,
       p.anchor_height,
       p.model_id,
       p.participant,
       list(p.node_id ORDER BY p.node_id)          AS node_ids,
       count(*)                                     AS nodes,
       CASE WHEN count(n.poc_weight) = count(*) THEN sum(n.poc_weight) END AS preserved_weight
FROM chain_preserved_nodes p
LEFT JOIN chain_ml_nodes n
       ON n.epoch = p.epoch AND n.model_id = p.model_id
      AND n.participant = p.participant AND n.node_id = p.node_id
WHERE p.epoch = $epoch AND ($participant IS NULL OR p.participant = $participant)
GROUP BY ALL
ORDER BY p.anchor_height, p.model_id, p.participant;
