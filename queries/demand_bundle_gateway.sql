-- demand_bundle_gateway: who the gateway whose logs the store holds is, in what the chain
-- publishes: the address(es) that created the escrows its logged attempts name
-- (devshard_escrow/{id} creator, probed at collect), and how many of those escrows the
-- chain records were found for. No request, key or client of the logs leaves with it.
-- Reads: attempts, chain_escrows.
WITH e AS (SELECT DISTINCT escrow FROM attempts WHERE escrow IS NOT NULL)
SELECT coalesce(list(DISTINCT c.creator ORDER BY c.creator) FILTER (WHERE c.creator IS NOT NULL), [])
           AS creators,
       count(*) AS escrows,
       count(c.creator) AS escrows_found
FROM e
LEFT JOIN chain_escrows c ON c.escrow_id = e.escrow AND c.found;
