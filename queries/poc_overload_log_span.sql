-- poc_overload_log_span: what the gateway logs in the store can say anything about: the
-- time range of their lines, and the models their attempts and dispositions name (a
-- gateway that served no traffic for a model is no evidence of that model's load), and how
-- many log files were read (a demand bundle says so).
-- Reads: log_events, log_files, attempts, log_nonce_dispositions.
SELECT (SELECT min(ts) FROM log_events) AS first_ts,
       (SELECT max(ts) FROM log_events) AS last_ts,
       (SELECT count(*) FROM log_events) AS lines,
       (SELECT count(*) FROM log_files) AS files,
       (SELECT list(DISTINCT model ORDER BY model) FROM
            (SELECT model FROM attempts UNION SELECT model FROM log_nonce_dispositions)
        WHERE model IS NOT NULL AND model <> '') AS models;
