-- targets_nodes: every ML node of every model subgroup of epoch $epoch with its poc_weight,
-- de-duplicated by (model, participant, node_id) keeping the highest poc_weight (as the
-- chain's sampler does), and whether each episode's snapshot preserved it
-- (preserved_in: the episodes, e.g. ['cpoc:0', 'poc_next']).
-- Reads: chain_ml_nodes, chain_preserved_nodes.
WITH n AS (
    SELECT model_id, participant, node_id, max(poc_weight) AS poc_weight
    FROM chain_ml_nodes WHERE epoch = $epoch GROUP BY ALL
)
SELECT n.model_id, n.participant, n.node_id, n.poc_weight,
       coalesce(list(p.episode ORDER BY p.episode) FILTER (WHERE p.episode IS NOT NULL), []) AS preserved_in
FROM n
LEFT JOIN chain_preserved_nodes p ON p.epoch = $epoch AND p.model_id = n.model_id
                                 AND p.participant = n.participant AND p.node_id = n.node_id
GROUP BY ALL
ORDER BY n.model_id, n.participant, n.node_id;
