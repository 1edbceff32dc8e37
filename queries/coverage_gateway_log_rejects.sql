-- Gateway log lines rejected, by reason, over every file ingested.
-- Reads: log_rejects.
SELECT reason, sum(lines) AS lines
FROM log_rejects
GROUP BY reason
ORDER BY lines DESC, reason;
