-- 010 devshard escrows on chain (chain-api.md section 12.3): one row per escrow id probed
-- with GET devshard_escrow/{id}. There is no list query, so the ids come from the logs and
-- the accounting API. found = false: never existed, or pruned (epochs <= current - 2 need
-- the height header). A settled escrow never changes again and is not probed again.
-- slots[i] is the host of slot i (slot_id = index, 0-based as on chain).
CREATE TABLE chain_escrows (
    escrow_id    UBIGINT PRIMARY KEY,
    found        BOOLEAN NOT NULL,
    creator      VARCHAR,
    amount       UBIGINT,          -- the original deposit; there is no live balance on chain
    epoch_index  UBIGINT,          -- creation epoch
    model_id     VARCHAR,
    token_price  UBIGINT,
    settled      BOOLEAN,
    app_hash     VARCHAR,
    slots        VARCHAR[],
    raw          JSON,             -- the escrow object as sent, for the fields not typed here
    source_url   VARCHAR,
    height       BIGINT,
    fetched_at   TIMESTAMPTZ
);
