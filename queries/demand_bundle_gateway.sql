-- demand_bundle_gateway: who the gateway whose logs the store holds is, in what the chain
-- publishes: the address(es) that created the escrows its logged attempts name
-- (devshard_escrow/{id} creator, probed at collect), how many of those escrows the chain
-- records were found for, and how many the chain was asked for and has no record of
-- (escrow_probes' last answer not_found). No request, key or client of the logs leaves with it.
-- Reads: attempts, chain_escrows, escrow_probes.
WITH e AS (SELECT DISTINCT escrow FROM attempts WHERE escrow IS NOT NULL)
SELECT coalesce(list(DISTINCT c.creator ORDER BY c.creator) FILTER (WHERE c.creator IS NOT NULL), [])
           AS creators,
       count(*) AS escrows,
       count(c.creator) AS escrows_found,
       count(*) FILTER (WHERE c.creator IS NULL AND p.outcome = 'not_found') AS escrows_not_found
FROM e
LEFT JOIN chain_escrows c ON c.escrow_id = e.escrow AND c.found
LEFT JOIN escrow_probes p ON p.escrow_id = e.escrow;
