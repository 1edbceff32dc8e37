-- 009: a store is evidence, so the rows of a log file stay when the file rotates out of
-- view (renamed where it is not given, compressed, deleted, truncated by copytruncate):
-- its log_files row is then marked gone instead of its rows being deleted. A rotated copy
-- found later (app.log.1, app.log.2.gz) is recognised by the fingerprint of its first
-- bytes and continued in the same row, which is then no longer gone.
--   gone_at       when this run found the file's content no longer at `path` (NULL: present)
-- head_len / head_sha256 now fingerprint the uncompressed content for every kind (they
-- held the compressed bytes of a .gz): those of .gz rows read before are unknown until
-- the file is seen again.
ALTER TABLE log_files ADD COLUMN gone_at TIMESTAMPTZ;
UPDATE log_files SET head_len = 0, head_sha256 = NULL WHERE kind = 'gz';
