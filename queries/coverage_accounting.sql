-- Accounting coverage of epoch $epoch (the escrows' creation epoch): which URLs
-- answered, with which schema versions, how many records were loaded, and the
-- ledger's updated_at range. One row; counts are 0 and the rest NULL when nothing
-- was collected for the epoch.
-- Reads: acct_participants, acct_slots, acct_counters.
SELECT list(DISTINCT p.source_url ORDER BY p.source_url) FILTER (WHERE p.source_url IS NOT NULL) AS urls,
       list(DISTINCT p.schema_version ORDER BY p.schema_version) FILTER (WHERE p.schema_version IS NOT NULL) AS schema_versions,
       count(p.participant)                                                   AS participant_records,
       (SELECT count(*) FROM acct_slots WHERE epoch = $epoch)                 AS slot_records,
       (SELECT count(*) FROM acct_counters WHERE epoch = $epoch)              AS counter_records,
       min(p.updated_at)                                                      AS first_updated_at,
       max(p.updated_at)                                                      AS last_updated_at,
       max(p.fetched_at)                                                      AS fetched_at
FROM acct_participants p
WHERE p.epoch = $epoch;
