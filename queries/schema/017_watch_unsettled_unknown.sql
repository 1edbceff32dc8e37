-- 017 watch readings: missed_unsettled may be NULL. A reading taken without --accounting or
-- --host read no escrow not yet settled on chain, so how many of its misses are unsettled is
-- unknown, not zero (auditor watch said 0, and its table and header printed 0). Rows stored
-- before keep the 0 they were stored with: which of them were taken without those sources is
-- not recorded.
ALTER TABLE watch_readings ALTER COLUMN missed_unsettled DROP NOT NULL;
