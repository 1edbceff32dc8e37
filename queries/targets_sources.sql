-- targets_sources: which gateway sources the store holds (demand seen by one gateway is a
-- lower bound on the network's): log files with their time range, and accounting API
-- sources, one a gateway stored (acct_epochs.gateway, migration 016; two behind one host are
-- two), named by the base URL they answered at, with the epochs they answered.
-- Reads: log_files, log_events, acct_epochs.
SELECT 'gateway_log' AS source, f.path AS name,
       (SELECT min(ts) FROM log_events e WHERE e.file_id = f.file_id) AS first_ts,
       (SELECT max(ts) FROM log_events e WHERE e.file_id = f.file_id) AS last_ts,
       NULL::VARCHAR AS epochs
FROM log_files f
UNION ALL
SELECT 'accounting', min(regexp_extract(source_url, '^(https?://.*?)/api/v1/', 1)), NULL, NULL,
       string_agg(DISTINCT CAST(epoch AS VARCHAR), ',')
FROM acct_epochs GROUP BY gateway
ORDER BY 1, 2;
