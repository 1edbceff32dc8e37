-- participants_matching: the participant addresses the store knows that start with $head and
-- end with $tail: what `--participant` resolves a label to (the last 8 characters the tables
-- and charts print, or the shortened `gonka1…p86j0skk`).
--
-- Reads: chain_validation_weights, chain_performance (the chain's participants of every stored
--        epoch), acct_participants (the gateway's, by full address; '' when absent),
--        log_participants (the addresses the logs print), and log_host_labels: a host label
--        the logs print whose address nothing stored knows stands for itself (the hedging
--        analysis matches hosts by label).
-- Zero rows: nothing stored matches; two or more: the label is ambiguous.
SELECT participant
FROM (
    SELECT participant FROM chain_validation_weights
    UNION SELECT participant FROM chain_performance
    UNION SELECT participant FROM acct_participants WHERE participant <> ''
    UNION SELECT address FROM log_participants
    UNION SELECT label FROM log_host_labels WHERE status = 'unknown' AND $head = ''
)
WHERE starts_with(participant, $head) AND ends_with(participant, $tail)
ORDER BY participant
LIMIT 5
