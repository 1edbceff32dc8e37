-- log_participants: the full participant addresses the gateway logs print themselves
-- (race_completed / nonce_disposition `participant=`), one row per address with the 8-character
-- label the logs use for it (its last 8 characters). The host-label view resolves labels
-- with these; they are a view of their own so that an analysis can keep its rows
-- (Store.derived) instead of parsing those lines' fields again.
-- Reads: log_race_lines, log_nonce_dispositions.
CREATE OR REPLACE VIEW log_participants AS
SELECT DISTINCT participant AS address, right(participant, 8) AS label
FROM (SELECT participant FROM log_race_lines UNION ALL SELECT participant FROM log_nonce_dispositions)
WHERE length(participant) > 8;
