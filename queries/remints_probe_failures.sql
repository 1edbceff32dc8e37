-- remints_probe_failures: the devshard_escrow/{id} probes of epoch $epoch (or of no known
-- epoch) that did not succeed, as the escrow collector recorded them in coverage.
-- Reads: coverage.
SELECT item, detail
FROM coverage
WHERE source = 'chain_escrows' AND status <> 'ok' AND (epoch = $epoch OR epoch IS NULL)
ORDER BY item;
