-- 006 (superseded): redefined the view log_host_labels; views now live in
-- queries/views/ and are re-created when the store opens. Kept so the version stays taken.
SELECT 1;
