-- chain_slot_allocation: the poc_slot_allocation in force in each epoch whose params were
-- collected: the epoch params' value, or the chain's code default 0.5 where they leave it
-- unset or 0 (chain-api.md, epoch_params: "code default 0.5 when unset or 0"). An epoch
-- whose params were not collected has no row: its allocation is unknown, not 0.5.
-- Reads: chain_params (purpose 'epoch').
CREATE OR REPLACE VIEW chain_slot_allocation AS
SELECT epoch,
       coalesce(nullif(poc_slot_allocation, 0), 0.5) AS poc_slot_allocation,
       coalesce(poc_slot_allocation, 0) = 0          AS code_default
FROM chain_params
WHERE purpose = 'epoch';
