-- 004 accounting: what `auditor collect --accounting URL` reads from the gateway's
-- accounting API (gateway-accounting.md), schema versions 2 to 5.
--
-- "epoch" is the ESCROW'S CREATION EPOCH (the API's epoch_index), not the epoch in
-- which the traffic happened (gateway-accounting.md section 2).
--
-- Every row carries schema_version (the record's own, else the response's) and
-- provenance: source_url (the exact URL answered), height (always NULL: the API is
-- not height-pinned) and fetched_at. Re-collecting epoch E replaces all of E's rows
-- in these tables in one transaction; a failed re-collection keeps the earlier rows.
--
-- NULL means "not reported": a field the record's schema version does not have
-- (timeout_pending before v3, required/completed_validations and findings before v5,
-- recording_errors/writer_errors from v4 on, ...) or a field absent from the record.
-- Map keys are different: the API sends only the keys that occurred, so a known
-- key missing from a map that was sent is 0 (section 3); the wide columns below
-- (finished_used ... unfinished_execution, timeout_*) are NULL only when the whole
-- map was absent. The maps themselves are kept as JSON, with every key as sent
-- (enums are open sets: a disposition this schema does not know is in the JSON).
-- Unknown fields are kept raw in `extra` (JSON object, NULL when there were none).
-- Counts are UBIGINT (uint64 on the wire).

-- One row per collected epoch: the EpochSummary from GET /api/v1/epochs.
CREATE TABLE acct_epochs (
    epoch                   BIGINT PRIMARY KEY,
    schema_version          INTEGER,
    updated_at              TIMESTAMPTZ,
    assigned_nonces         UBIGINT,
    finished_used           UBIGINT,
    finished_unused         UBIGINT,
    finished_usage_unknown  UBIGINT,
    ghost                   UBIGINT,
    protocol_only           UBIGINT,
    unfinished_refused      UBIGINT,
    unfinished_execution    UBIGINT,
    timeout_applied         UBIGINT,
    timeout_skipped         UBIGINT,
    timeout_vote_collection_failed UBIGINT,
    timeout_insufficient_votes     UBIGINT,
    timeout_diff_send_failed       UBIGINT,
    dispositions            JSON,
    timeout_outcomes        JSON,
    protocol_misses         UBIGINT,
    protocol_invalid        UBIGINT,
    required_validations    UBIGINT,     -- v5
    completed_validations   UBIGINT,     -- v5
    unresolved_challenges   UBIGINT,
    in_flight               UBIGINT,
    timeout_pending         UBIGINT,     -- v3+
    pending_classification  UBIGINT,
    unclassified            UBIGINT,
    overclassified          UBIGINT,
    unknown_reason_total    UBIGINT,
    cross_check_errors      UBIGINT,
    recording_errors        UBIGINT,     -- v2-v3
    writer_errors           UBIGINT,     -- v2-v3
    extra                   JSON,
    source_url              VARCHAR,
    height                  BIGINT,
    fetched_at              TIMESTAMPTZ
);

-- One row per ParticipantRecord of GET /api/v1/epochs/{E}/participants:
-- one per (participant, model), totals over every escrow of the epoch.
CREATE TABLE acct_participants (
    epoch                   BIGINT NOT NULL,
    participant             VARCHAR NOT NULL,   -- full gonka1... address ('' if absent)
    model                   VARCHAR NOT NULL,   -- '' if absent
    schema_version          INTEGER,
    updated_at              TIMESTAMPTZ,
    assigned_nonces         UBIGINT,
    finished_used           UBIGINT,
    finished_unused         UBIGINT,
    finished_usage_unknown  UBIGINT,
    ghost                   UBIGINT,
    protocol_only           UBIGINT,
    unfinished_refused      UBIGINT,
    unfinished_execution    UBIGINT,
    timeout_applied         UBIGINT,
    timeout_skipped         UBIGINT,
    timeout_vote_collection_failed UBIGINT,
    timeout_insufficient_votes     UBIGINT,
    timeout_diff_send_failed       UBIGINT,
    dispositions            JSON,
    timeout_outcomes        JSON,
    protocol_misses         UBIGINT,
    protocol_invalid        UBIGINT,
    required_validations    UBIGINT,     -- v5
    completed_validations   UBIGINT,     -- v5
    unresolved_challenges   UBIGINT,
    in_flight               UBIGINT,
    timeout_pending         UBIGINT,     -- v3+
    pending_classification  UBIGINT,
    unclassified            UBIGINT,
    overclassified          UBIGINT,
    unknown_reason_total    UBIGINT,
    recording_errors        UBIGINT,     -- v2-v3
    writer_errors           UBIGINT,     -- v2-v3
    cc_timeout_applied      UBIGINT,     -- cross_checks.timeout_applied
    cc_host_missed          UBIGINT,     -- cross_checks.host_missed
    cc_recorded_invalid_transitions UBIGINT,
    cc_host_invalid         UBIGINT,
    cc_error_count          UBIGINT,     -- cross_checks.error_count
    n_escrows               INTEGER,     -- entries in latest_nonces
    n_counters              INTEGER,
    n_slots                 INTEGER,
    n_findings              INTEGER,     -- NULL before v5 (no findings field)
    extra                   JSON,
    source_url              VARCHAR,
    height                  BIGINT,
    fetched_at              TIMESTAMPTZ,
    PRIMARY KEY (epoch, participant, model)
);

-- latest_nonces of each participant record: the escrows behind its totals.
CREATE TABLE acct_escrow_nonces (
    epoch           BIGINT NOT NULL,
    participant     VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    escrow_id       VARCHAR NOT NULL,   -- a string on the wire (chain devshard_escrow/{id})
    latest_nonce    UBIGINT,
    phase           VARCHAR,            -- active|finalizing|finalized|settled; NULL in v2
    schema_version  INTEGER,
    extra           JSON,
    source_url      VARCHAR,
    height          BIGINT,
    fetched_at      TIMESTAMPTZ
);

-- counters: one row per CounterRecord (escrow, CounterKey) with its count.
-- String dimensions are '' when empty (the wire omits them: omitempty), so
-- `failure_origin NOT IN ('gateway_policy', 'client')` keeps the empty ones, as
-- the gateway's findings do. delivery_reason and the four timing flags exist from
-- v5 on: NULL before v5, ''/false when omitted in v5+.
CREATE TABLE acct_counters (
    epoch                    BIGINT NOT NULL,
    participant              VARCHAR NOT NULL,
    model                    VARCHAR NOT NULL,
    escrow_id                VARCHAR NOT NULL,
    seq                      INTEGER NOT NULL,  -- position in the record's counters list
    slot_id                  BIGINT,
    disposition              VARCHAR NOT NULL,
    dispatch_phase           VARCHAR NOT NULL,  -- normal|poc|confirmation_poc|''
    timeout_evaluation_phase VARCHAR NOT NULL,
    quarantine_mode          VARCHAR NOT NULL,  -- none|probe|shadow|probation|''
    no_send_reason           VARCHAR NOT NULL,
    failure_origin           VARCHAR NOT NULL,  -- host_response|gateway_policy|client|transport_unknown|''
    detail_reason            VARCHAR NOT NULL,
    delivery_reason          VARCHAR,           -- v5
    timeout_kind             VARCHAR NOT NULL,  -- refused|execution|''
    timeout_outcome          VARCHAR NOT NULL,  -- skipped|vote_collection_failed|insufficient_votes|diff_send_failed|applied|''
    timeout_reason           VARCHAR NOT NULL,
    logprobs_decoded         BOOLEAN,           -- v5
    slow_receipt             BOOLEAN,           -- v5
    slow_chunk               BOOLEAN,           -- v5
    clock_drifted            BOOLEAN,           -- v5
    count                    UBIGINT,
    key_extra                JSON,              -- CounterKey fields this schema does not know
    schema_version           INTEGER,
    source_url               VARCHAR,
    height                   BIGINT,
    fetched_at               TIMESTAMPTZ
);

-- slots: one row per SlotRecord (escrow, slot) of a participant record.
CREATE TABLE acct_slots (
    epoch                   BIGINT NOT NULL,
    participant             VARCHAR NOT NULL,
    model                   VARCHAR NOT NULL,
    escrow_id               VARCHAR NOT NULL,
    slot_id                 BIGINT,
    assigned_nonces         UBIGINT,
    finished_used           UBIGINT,
    finished_unused         UBIGINT,
    finished_usage_unknown  UBIGINT,
    ghost                   UBIGINT,
    protocol_only           UBIGINT,
    unfinished_refused      UBIGINT,
    unfinished_execution    UBIGINT,
    timeout_applied         UBIGINT,
    timeout_skipped         UBIGINT,
    timeout_vote_collection_failed UBIGINT,
    timeout_insufficient_votes     UBIGINT,
    timeout_diff_send_failed       UBIGINT,
    dispositions            JSON,
    timeout_outcomes        JSON,
    delivery_reasons        JSON,        -- v5 ({} when omitted); NULL before v5
    protocol_misses         UBIGINT,
    protocol_invalid        UBIGINT,
    required_validations    UBIGINT,     -- v5
    completed_validations   UBIGINT,     -- v5
    unresolved_challenges   UBIGINT,
    recorded_invalid_transitions UBIGINT,
    in_flight               UBIGINT,
    timeout_pending         UBIGINT,     -- v3+
    pending_classification  UBIGINT,
    unclassified            UBIGINT,
    overclassified          UBIGINT,
    unknown_reason_total    UBIGINT,
    cross_check_error       UBIGINT,     -- v4+
    extra                   JSON,
    schema_version          INTEGER,
    source_url              VARCHAR,
    height                  BIGINT,
    fetched_at              TIMESTAMPTZ
);

-- findings (v5): the gateway's own verdicts per participant record, in the order sent.
CREATE TABLE acct_findings (
    epoch           BIGINT NOT NULL,
    participant     VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    seq             INTEGER NOT NULL,
    code            VARCHAR NOT NULL,   -- open set: execution_timeouts, chain_recorded_misses, ...
    severity        VARCHAR NOT NULL,   -- warning|critical (open)
    part            UBIGINT,            -- may be a uint64 underflow (ledger_disagrees_with_chain)
    whole           UBIGINT,            -- NULL for count findings (omitempty)
    extra           JSON,
    schema_version  INTEGER,
    source_url      VARCHAR,
    height          BIGINT,
    fetched_at      TIMESTAMPTZ
);
