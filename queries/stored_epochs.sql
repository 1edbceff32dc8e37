-- stored_epochs: the epochs from $first to $last (inclusive) whose chain data the store holds,
-- in order: what `targets --epochs A..B` pools and what a demand bundle may cover.
--
-- Reads: chain_epochs.
SELECT epoch FROM chain_epochs WHERE epoch BETWEEN $first AND $last ORDER BY epoch
