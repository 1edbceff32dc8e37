-- The slot maps in long form, every key as sent (open enums included):
-- map is 'disposition' | 'timeout_outcome' | 'delivery_reason'.
CREATE OR REPLACE VIEW acct_slot_map_counts AS
SELECT s.epoch, s.participant, s.model, s.escrow_id, s.slot_id, m.map, j.key, CAST(j.value AS UBIGINT) AS count
FROM acct_slots s,
     (SELECT 'disposition' AS map UNION ALL SELECT 'timeout_outcome' UNION ALL SELECT 'delivery_reason') m,
     json_each(CASE m.map WHEN 'disposition' THEN s.dispositions
                          WHEN 'timeout_outcome' THEN s.timeout_outcomes
                          ELSE s.delivery_reasons END) j;
