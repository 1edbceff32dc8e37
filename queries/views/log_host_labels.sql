-- log_host_labels: resolve a log's 8-character host label against every address the
-- store knows for it: chain group members (chain_validation_weights), accounting
-- participants (acct_participants, 004) and full addresses the logs print themselves
-- (log_participants). 'resolved' when exactly one known address ends with the label,
-- 'ambiguous' when several do (candidates lists them), 'unknown' when none does.
-- Reads: log_host_lines, chain_validation_weights, acct_participants, log_participants.
CREATE OR REPLACE VIEW log_host_labels AS
WITH labels AS (
    SELECT * FROM log_host_lines
), known AS (
    SELECT participant AS address, 'chain' AS source FROM chain_validation_weights
    UNION
    SELECT participant, 'accounting' FROM acct_participants
    UNION
    SELECT address, 'log' FROM log_participants
), by_label AS (
    SELECT right(address, 8) AS label,
           list(DISTINCT address ORDER BY address) AS addresses,
           list(DISTINCT source ORDER BY source) AS sources
    FROM known WHERE address IS NOT NULL GROUP BY 1
)
SELECT l.label,
       CASE WHEN b.addresses IS NULL THEN 'unknown'
            WHEN len(b.addresses) = 1 THEN 'resolved'
            ELSE 'ambiguous' END AS status,
       CASE WHEN len(b.addresses) = 1 THEN b.addresses[1] END AS address,
       coalesce(b.addresses, []) AS candidates,
       coalesce(b.sources, []) AS resolved_from,
       l.lines, l.first_ts, l.last_ts
FROM labels l
LEFT JOIN by_label b ON b.label = l.label
ORDER BY l.label;
