-- coverage_chain_escrows: of the escrows probed on chain for epoch $epoch (its coverage items
-- devshard_escrow/<id> that the chain answered), how many the chain holds a record of and how
-- many it answered 404 for (never existed, or pruned: chain-api.md 1.6). Answered is not found.
-- Reads: coverage, chain_escrows.
SELECT count(*) FILTER (WHERE e.found) AS found,
       count(*) FILTER (WHERE NOT e.found) AS not_found
FROM coverage c
JOIN chain_escrows e ON e.escrow_id = TRY_CAST(split_part(c.item, '/', 2) AS UBIGINT)
WHERE c.source = 'chain_escrows' AND c.epoch = $epoch AND c.status = 'ok';
