-- poc_overload_escrow_slots: the slot list (slot id -> host address) of every escrow the
-- store knows, from the best source that has it: the chain's devshard_escrow/{id} record
-- (chain_escrows.slots, index = slot id), else the accounting API's slot records
-- (acct_slots), else the gateway logs (slot = nonce mod group size, the group size from
-- decision_made, the host from race_completed / nonce_disposition participant=).
-- epoch_index / model_id come from the chain record when there is one.
-- Reads: chain_escrows, acct_slots, log_hedge_decisions, attempts, log_nonce_dispositions.
WITH chain AS (
    SELECT CAST(e.escrow_id AS BIGINT) AS escrow, CAST(u.i - 1 AS BIGINT) AS slot_id, u.host AS participant,
           len(e.slots) AS group_size, 'chain' AS source,
           CAST(e.epoch_index AS BIGINT) AS epoch_index, e.model_id
    FROM chain_escrows e,
         LATERAL (SELECT unnest(e.slots) AS host, generate_subscripts(e.slots, 1) AS i) u
    WHERE e.found AND e.slots IS NOT NULL
), acct AS (
    SELECT TRY_CAST(escrow_id AS BIGINT) AS escrow, slot_id, any_value(participant) AS participant,
           CAST(NULL AS BIGINT) AS group_size, 'accounting' AS source,
           CAST(NULL AS BIGINT) AS epoch_index, any_value(model) AS model_id
    FROM acct_slots WHERE slot_id IS NOT NULL AND participant <> ''
    GROUP BY 1, 2
), gs AS (
    SELECT escrow, max(CAST(group_size AS BIGINT)) AS group_size
    FROM log_hedge_decisions WHERE escrow IS NOT NULL
    GROUP BY escrow
), seen AS (
    SELECT escrow, nonce, participant, model FROM attempts
    WHERE escrow IS NOT NULL AND nonce IS NOT NULL AND length(participant) > 8
    UNION ALL
    SELECT escrow, nonce, participant, model FROM log_nonce_dispositions
    WHERE escrow IS NOT NULL AND nonce IS NOT NULL AND length(participant) > 8
), logs AS (
    SELECT s.escrow, s.nonce % gs.group_size AS slot_id, min(s.participant) AS participant,
           any_value(gs.group_size) AS group_size, 'log' AS source,
           CAST(NULL AS BIGINT) AS epoch_index, any_value(s.model) AS model_id,
           count(DISTINCT s.participant) AS hosts_seen
    FROM seen s JOIN gs ON gs.escrow = s.escrow AND gs.group_size > 0
    GROUP BY 1, 2
)
SELECT * EXCLUDE (rk) FROM (
    SELECT *, row_number() OVER (PARTITION BY escrow, slot_id
                                 ORDER BY CASE source WHEN 'chain' THEN 0 WHEN 'accounting' THEN 1 ELSE 2 END) AS rk
    FROM (SELECT *, 1 AS hosts_seen FROM chain UNION ALL BY NAME
          SELECT *, 1 AS hosts_seen FROM acct UNION ALL BY NAME
          SELECT * FROM logs)
) WHERE rk = 1
ORDER BY escrow, slot_id;
