-- participant_in_epoch: whether $participant is one of epoch $epoch's participants by what the
-- store holds of that epoch (the chain's weights and performance, a gateway's accounting), and
-- whether the store holds any participant of the epoch at all. What `--participant ADDR` is
-- checked against: a full address no stored source of the epoch knows is a typo (issue 33);
-- each `--mine` address too (auditor/mine.py: one not of the epoch is a note, never an error).
-- $epoch NULL (a report over --since/--until): of any stored epoch.
--
-- Reads: chain_validation_weights, chain_performance, acct_participants.
-- One row.
WITH of_epoch AS (
    SELECT participant FROM chain_validation_weights WHERE $epoch IS NULL OR epoch = $epoch
    UNION ALL SELECT participant FROM chain_performance WHERE $epoch IS NULL OR epoch = $epoch
    UNION ALL SELECT participant FROM acct_participants WHERE participant <> '' AND ($epoch IS NULL OR epoch = $epoch)
)
SELECT coalesce(bool_or(participant = $participant), false) AS of_epoch,
       count(*) > 0 AS epoch_stored
FROM of_epoch
