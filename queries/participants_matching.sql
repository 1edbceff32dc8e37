-- participants_matching: the participant addresses the store knows that start with $head and
-- end with $tail: what `--participant` resolves a label to (the last 8 characters the tables
-- and charts print, or the shortened `gonka1…p86j0skk`).
--
-- Reads: chain_validation_weights, chain_performance (the chain's participants of every stored
--        epoch), acct_participants (the gateway's, by full address; '' when absent).
-- Zero rows: nothing stored matches; two or more: the label is ambiguous.
SELECT participant
FROM (
    SELECT participant FROM chain_validation_weights
    UNION SELECT participant FROM chain_performance
    UNION SELECT participant FROM acct_participants WHERE participant <> ''
)
WHERE starts_with(participant, $head) AND ends_with(participant, $tail)
ORDER BY participant
LIMIT 5
