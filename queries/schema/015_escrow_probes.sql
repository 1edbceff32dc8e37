-- 015 escrow probes: what the escrow collector (auditor/sources/escrows.py) remembers between
-- runs about each id it asked the node for with GET devshard_escrow/{id}, so that an id the
-- node does not know (never existed, or an id a gateway's accounting API invented) is not asked
-- again on every run: one row per id ever probed (issue 35).
--   escrow_id   the id asked
--   probes      how many runs asked it
--   last_at     when it was last asked (UTC)
--   outcome     found | not_found | failed: the last answer (failed: no node gave one)
--   next_at     the earliest time it is asked again: found and not settled, or failed, next
--               run; not found, after a wait that doubles with each probe (1 h, 2 h, 4 h, ...,
--               at most 7 days); a settled record is never asked again (chain_escrows)
CREATE TABLE escrow_probes (
    escrow_id   UBIGINT PRIMARY KEY,
    probes      INTEGER NOT NULL,
    last_at     TIMESTAMPTZ NOT NULL,
    outcome     VARCHAR NOT NULL,
    next_at     TIMESTAMPTZ NOT NULL
);
