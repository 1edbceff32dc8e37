-- 008 (superseded): gave log_requests one rule for a suppressed loser (counted from
-- log_attempts); views now live in queries/views/ (log_requests.sql) and are re-created
-- when the store opens. Kept so the version stays taken.
SELECT 1;
