-- participants_stored: every participant address the store knows, from any epoch or source,
-- with whether the gateway logs name it (they carry no epoch: an address they name counts as
-- stored for any epoch). What a mistyped `--participant ADDR` is compared with, to name the
-- closest (issue 33).
--
-- Reads: chain_validation_weights, chain_performance, acct_participants, log_participants.
SELECT participant, bool_or(from_logs) AS from_logs
FROM (
    SELECT participant, false AS from_logs FROM chain_validation_weights
    UNION ALL SELECT participant, false FROM chain_performance
    UNION ALL SELECT participant, false FROM acct_participants WHERE participant <> ''
    UNION ALL SELECT address, true FROM log_participants
)
GROUP BY participant
ORDER BY participant
