-- 002 chain: what `auditor collect --epoch N --node URL` reads from the chain.
-- Every row carries provenance: source_url (the exact URL answered), height (the
-- x-cosmos-block-height it was pinned at, NULL when unpinned) and fetched_at.
-- Re-collecting epoch N replaces all of N's rows in these tables in one transaction.
-- 64-bit chain integers are HUGEINT (never floats); chain Decimals are DECIMAL(38,18).

-- One row per collected epoch: its heights (section 4 of chain-api.md).
CREATE TABLE chain_epochs (
    epoch                   BIGINT PRIMARY KEY,
    poc_start_height        BIGINT,      -- S(N)
    poc_gen_end_height      BIGINT,      -- S(N) + poc_stage_duration
    poc_val_end_height      BIGINT,      -- V(N): epoch N-1 settled here
    effective_height        BIGINT,      -- SNV(N) (effective_block_height)
    last_height             BIGINT,      -- last height N was effective (NULL while current)
    next_poc_start_height   BIGINT,      -- S(N+1); NULL if N+1 does not exist yet
    settlement_height       BIGINT,      -- V(N+1): epoch N settled here; NULL if unknown
    next_effective_height   BIGINT,      -- SNV(N+1)
    epoch_group_id          BIGINT,
    total_weight            HUGEINT,
    settled                 BOOLEAN NOT NULL,   -- N+1 exists and V(N+1) has passed
    complete                BOOLEAN NOT NULL,   -- every item of the fetch plan was obtained
    source_url              VARCHAR,
    height                  BIGINT,
    fetched_at              TIMESTAMPTZ
);

-- Epoch params as in force for a purpose: 'epoch' (pinned at S(N+1), used for N's
-- CPoC windows) and 'settlement' (pinned at V(N+1) - 1, used by the miss test).
CREATE TABLE chain_params (
    epoch                         BIGINT NOT NULL,
    purpose                       VARCHAR NOT NULL,
    epoch_length                  BIGINT,
    poc_stage_duration            BIGINT,
    poc_exchange_duration         BIGINT,
    poc_validation_delay          BIGINT,
    poc_validation_duration       BIGINT,
    set_new_validators_delay      BIGINT,
    inference_validation_cutoff   BIGINT,
    confirmation_poc_safety_window BIGINT,
    poc_slot_allocation           DECIMAL(38,18),
    binom_test_p0                 DECIMAL(38,18),
    expiration_blocks             BIGINT,
    raw                           JSON,      -- the whole params object as received
    source_url                    VARCHAR,
    height                        BIGINT,
    fetched_at                    TIMESTAMPTZ,
    PRIMARY KEY (epoch, purpose)
);

-- The models of the epoch (root sub_group_models) with their subgroup totals.
CREATE TABLE chain_epoch_models (
    epoch              BIGINT NOT NULL,
    model_id           VARCHAR NOT NULL,
    total_weight       HUGEINT,       -- subgroup total_weight
    poc_weight_sum     HUGEINT,       -- sum of ml_nodes poc_weight (raw model units): W_m
    members            INTEGER,
    nodes              INTEGER,
    weight_scale_factor DECIMAL(38,18), -- root confirmation_weight_scales, NULL if absent
    source_url         VARCHAR,
    height             BIGINT,
    fetched_at         TIMESTAMPTZ,
    PRIMARY KEY (epoch, model_id)
);

-- validation_weights of the root ('' model) and of each model subgroup.
CREATE TABLE chain_validation_weights (
    epoch               BIGINT NOT NULL,
    model_id            VARCHAR NOT NULL,   -- '' = root group
    participant         VARCHAR NOT NULL,
    weight              HUGEINT,
    confirmation_weight HUGEINT,
    reputation          INTEGER,
    voting_power        HUGEINT,
    source_url          VARCHAR,
    height              BIGINT,
    fetched_at          TIMESTAMPTZ,
    PRIMARY KEY (epoch, model_id, participant)
);

-- ML nodes per model subgroup member.
CREATE TABLE chain_ml_nodes (
    epoch               BIGINT NOT NULL,
    model_id            VARCHAR NOT NULL,
    participant         VARCHAR NOT NULL,
    node_id             VARCHAR NOT NULL,
    poc_weight          HUGEINT,
    throughput          HUGEINT,
    timeslot_allocation BOOLEAN[],
    source_url          VARCHAR,
    height              BIGINT,
    fetched_at          TIMESTAMPTZ
);

-- epoch_performance_summary/N: one row per participant of ActiveParticipants(N).
CREATE TABLE chain_performance (
    epoch                  BIGINT NOT NULL,
    participant            VARCHAR NOT NULL,
    inference_count        HUGEINT NOT NULL,
    missed_requests        HUGEINT NOT NULL,
    earned_coins           HUGEINT NOT NULL,
    rewarded_coins         HUGEINT NOT NULL,
    burned_coins           HUGEINT NOT NULL,
    validated_inferences   HUGEINT NOT NULL,
    invalidated_inferences HUGEINT NOT NULL,
    claimed                BOOLEAN NOT NULL,
    source_url             VARCHAR,
    height                 BIGINT,
    fetched_at             TIMESTAMPTZ,
    PRIMARY KEY (epoch, participant)
);

-- excluded_participants/N
CREATE TABLE chain_excluded (
    epoch             BIGINT NOT NULL,
    participant       VARCHAR NOT NULL,
    reason            VARCHAR,
    exclusion_height  BIGINT,
    source_url        VARCHAR,
    height            BIGINT,
    fetched_at        TIMESTAMPTZ
);

-- confirmation_poc_events/N with their computed windows (chain-api.md section 6).
CREATE TABLE chain_cpoc_events (
    epoch             BIGINT NOT NULL,
    event_sequence    BIGINT NOT NULL,
    trigger_height    BIGINT NOT NULL,
    generation_start_height BIGINT,   -- G as reported; windows use the computed value
    phase             VARCHAR,
    poc_seed_block_hash VARCHAR,
    gen_start         BIGINT,         -- G = trigger + max(inference_validation_cutoff, 1)
    gen_end           BIGINT,
    exchange_end      BIGINT,
    val_start         BIGINT,
    val_end           BIGINT,
    source_url        VARCHAR,
    height            BIGINT,
    fetched_at        TIMESTAMPTZ,
    PRIMARY KEY (epoch, event_sequence)
);

-- preserved_nodes_snapshot per episode: 'poc_start' (anchor S(N)), 'poc_next'
-- (anchor S(N+1)) and 'cpoc:<seq>' (anchor trigger_height), pinned and anchor-checked.
CREATE TABLE chain_preserved_nodes (
    epoch          BIGINT NOT NULL,
    episode        VARCHAR NOT NULL,
    anchor_height  BIGINT NOT NULL,
    model_id       VARCHAR NOT NULL,
    participant    VARCHAR NOT NULL,
    node_id        VARCHAR NOT NULL,
    source_url     VARCHAR,
    height         BIGINT,
    fetched_at     TIMESTAMPTZ
);

-- models_all at the epoch's settlement height.
CREATE TABLE chain_models (
    epoch                    BIGINT NOT NULL,
    model_id                 VARCHAR NOT NULL,
    units_of_compute_per_token HUGEINT,
    context_window           HUGEINT,
    v_ram                    HUGEINT,
    throughput_per_nonce     HUGEINT,
    raw                      JSON,
    source_url               VARCHAR,
    height                   BIGINT,
    fetched_at               TIMESTAMPTZ,
    PRIMARY KEY (epoch, model_id)
);

-- Block times of window boundary heights (/chain-rpc/block?height=H). Not per epoch:
-- a height's time never changes.
CREATE TABLE chain_block_times (
    height      BIGINT PRIMARY KEY,
    time        TIMESTAMPTZ NOT NULL,  -- microsecond precision
    time_text   VARCHAR NOT NULL,      -- as sent, with nanoseconds
    source_url  VARCHAR,
    fetched_at  TIMESTAMPTZ
);

-- Named boundary heights of an epoch ('S(N)', 'V(N+1)', 'cpoc:0 gen_start', ...),
-- so reports can list them in order with their times.
CREATE TABLE chain_epoch_heights (
    epoch    BIGINT NOT NULL,
    name     VARCHAR NOT NULL,
    height   BIGINT NOT NULL,
    PRIMARY KEY (epoch, name)
);
