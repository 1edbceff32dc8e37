-- retention_epochs: the epochs `auditor prune --keep-epochs $keep` keeps the gateway log of
-- (and `report daily`'s retain_epochs): the newest $keep epochs the store holds from the chain,
-- from $also on when that is older (the epoch `report daily` reports; NULL: none), and every
-- stored epoch between, each with its effective start SNV(N) from chain_windows (start_time
-- NULL: that block's time was not collected). The log lines timed before the first row's
-- start_time are dropped. `stored` is how many epochs the store holds in all.
-- Reads: chain_epochs, chain_windows.
WITH stored AS (SELECT epoch, row_number() OVER (ORDER BY epoch DESC) AS newest FROM chain_epochs),
first AS (SELECT least(min(epoch) FILTER (WHERE newest <= $keep), $also) AS epoch FROM stored)
SELECT s.epoch, w.start_height, w.start_time, (SELECT count(*) FROM stored) AS stored
FROM stored s
LEFT JOIN chain_windows w ON w.epoch = s.epoch AND w."window" = 'epoch'
WHERE s.epoch >= (SELECT epoch FROM first)
ORDER BY s.epoch;
