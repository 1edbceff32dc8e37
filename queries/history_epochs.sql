-- history_epochs: the last $n settled epochs the store holds with a performance summary of
-- $participant: what `auditor history ADDR` reads without --epochs and without a node to ask
-- (with a node: its last settled epochs).
--
-- Reads: chain_epochs, chain_performance.
SELECT e.epoch
FROM chain_epochs e
WHERE e.settled
  AND EXISTS (SELECT 1 FROM chain_performance p WHERE p.epoch = e.epoch AND p.participant = $participant)
ORDER BY e.epoch DESC
LIMIT $n
