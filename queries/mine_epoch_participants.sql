-- mine_epoch_participants: the participants of epoch $epoch, as the chain stored them: what
-- `--mine` checks each of the operator's addresses against (one not among them, excluded, new
-- or gone, is a note, never an error).
-- Reads: chain_performance, chain_validation_weights.
SELECT participant FROM chain_performance WHERE epoch = $epoch
UNION
SELECT participant FROM chain_validation_weights WHERE epoch = $epoch
ORDER BY participant;
