-- capability_refusals: what each participant's build or model refused in epoch $epoch, from the
-- accounting API's schema-6 `capability` block (queries/schema/015_accounting_v6.sql), one row
-- per participant record (participant, model) of the escrows created in epoch $epoch: its
-- schema_version (a record before 6 does not report refusals: unknown, not none), whether it sent
-- a block, and the block's six fields as sent (NULL: omitted, which the gateway does for
-- false and 0). A refusal happens before any receipt, so each refused request is a miss (#2107).
-- With several gateways' accounting stored (migration 016), one row per gateway's record: each
-- gateway counts the requests it sent, so their refusals add up.
-- Reads: acct_participants, acct_capabilities.
SELECT p.participant, p.model, p.schema_version,
       c.participant IS NOT NULL AS block_sent,
       c.protocol_version_unsupported, c.tool_choice_unsupported, c.context_limit,
       c.version_refusals, c.tool_refusals, c.context_refusals
FROM acct_participants p
LEFT JOIN acct_capabilities c USING (epoch, gateway, participant, model)
WHERE p.epoch = $epoch
ORDER BY p.participant, p.model, p.gateway;
