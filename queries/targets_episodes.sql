-- targets_episodes: the preserved weight of each PoC episode of epoch $epoch per model
-- (poc_start, poc_next, cpoc:<seq>), the participants preserved, and the episode's
-- window in wall-clock time where it is a confirmation PoC ([trigger, val_end]).
-- Reads: chain_preserved_nodes, chain_ml_nodes, chain_windows.
WITH pn AS (
    SELECT p.episode, p.anchor_height, p.model_id, p.participant, p.node_id, n.poc_weight
    FROM chain_preserved_nodes p
    LEFT JOIN (SELECT model_id, participant, node_id, max(poc_weight) AS poc_weight
               FROM chain_ml_nodes WHERE epoch = $epoch GROUP BY ALL) n
           ON n.model_id = p.model_id AND n.participant = p.participant AND n.node_id = p.node_id
    WHERE p.epoch = $epoch
)
SELECT pn.episode, pn.anchor_height, pn.model_id,
       count(*) AS nodes, count(DISTINCT pn.participant) AS participants,
       CASE WHEN count(pn.poc_weight) = count(*) THEN sum(pn.poc_weight) END AS preserved_weight,
       list(struct_pack(participant := pn.participant, weight := pn.poc_weight)) AS node_weights,
       w.start_time, w.end_time
FROM pn
LEFT JOIN chain_windows w ON w.epoch = $epoch AND w.window = pn.episode
GROUP BY ALL
ORDER BY pn.anchor_height, pn.model_id;
