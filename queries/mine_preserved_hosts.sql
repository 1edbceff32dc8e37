-- mine_preserved_hosts: the participants whose nodes were preserved in each PoC episode of
-- epoch $epoch (poc_start, poc_next, cpoc:<seq>), per model: a model's preserved_capacity_short
-- finding is an operator's own (`--mine`) when one of its addresses is among them.
-- Reads: chain_preserved_nodes.
SELECT DISTINCT episode, model_id, participant
FROM chain_preserved_nodes
WHERE epoch = $epoch
ORDER BY episode, model_id, participant;
