-- 014 accounting schema 6 (gateway-logs.md 14.4; devshard/accounting/types.go and
-- capability.go of gonka-ai/gonka, `const SchemaVersion = 6`): what a schema-6 gateway adds to
-- the tables of 004. NULL keeps meaning "not reported": every column below is NULL on the rows
-- of a schema 2-5 record, and on a schema-6 row whose field was absent.

-- The three host-activity counts of a ParticipantRecord and a SlotRecord. They are not
-- omitempty in the source: a schema-6 record sends them, 0 included.
--   validations_performed  validations this host performed for others
--   timeouts_applied       timeouts applied on its nonces
--   in_flight_requests     client requests open on it (a request holding several nonces counts once)
ALTER TABLE acct_participants ADD COLUMN validations_performed UBIGINT;
ALTER TABLE acct_participants ADD COLUMN timeouts_applied UBIGINT;
ALTER TABLE acct_participants ADD COLUMN in_flight_requests UBIGINT;
ALTER TABLE acct_slots ADD COLUMN validations_performed UBIGINT;
ALTER TABLE acct_slots ADD COLUMN timeouts_applied UBIGINT;
ALTER TABLE acct_slots ADD COLUMN in_flight_requests UBIGINT;
-- The EpochSummary of the source read sends in_flight_requests only; the other two are kept
-- when a build sends them (NULL otherwise: not reported, not 0).
ALTER TABLE acct_epochs ADD COLUMN validations_performed UBIGINT;
ALTER TABLE acct_epochs ADD COLUMN timeouts_applied UBIGINT;
ALTER TABLE acct_epochs ADD COLUMN in_flight_requests UBIGINT;

-- The CounterKey flag slow_decode (answer written at more than 40 ms per output token): an
-- omitempty boolean like the v5 flags, so false when omitted from a schema-6 key, NULL before 6.
-- (The new no-send reason participant_state_diverged_no_send and the timeout reasons
-- host_served_probe, escrow_gone_from_hosts, verifier_version_unsupported,
-- verifier_escrow_missing, verifier_inference_missing, verifier_unreachable,
-- verifier_queue_expired, verifier_rpc_timeout, vote_weight_short are values of the existing
-- columns acct_counters.no_send_reason and timeout_reason.)
ALTER TABLE acct_counters ADD COLUMN slow_decode BOOLEAN;

-- acct_capabilities: the `capability` block of a schema-6 ParticipantRecord (HostCapability),
-- one row per (epoch, participant, model) record that sent one. What the host's build or the
-- model refused this epoch:
--   protocol_version_unsupported  the host refused a request for its protocol version, at least once
--   tool_choice_unsupported       it refused a request's tool_choice, at least once
--   context_limit                 the context length the model on it accepts (tokens)
--   version_refusals, tool_refusals, context_refusals   how many requests it refused for each
-- The booleans once meant "currently unusable"; since schema 6 they mean "refused at least once
-- this epoch" (a host is never withheld from routing for a refusal), and the counts say how often.
-- Every field of the block is omitempty, and the gateway omits the whole block when all six are
-- empty. So, as stored here:
--   * no row for a record of schema 6 or later: the gateway had nothing to report (no refusal, no
--     known context limit); for a record before 6 (acct_participants.schema_version): unknown;
--   * a NULL column on a row: the field was omitted, which the gateway does for false / 0 (for
--     context_limit: no limit known, not a limit of 0). Kept NULL, as sent; a reader that wants
--     the gateway's value takes coalesce(col, false) / coalesce(col, 0).
CREATE TABLE acct_capabilities (
    epoch                         BIGINT NOT NULL,   -- the escrows' creation epoch, as acct_participants
    participant                   VARCHAR NOT NULL,
    model                         VARCHAR NOT NULL,
    protocol_version_unsupported  BOOLEAN,
    tool_choice_unsupported       BOOLEAN,
    context_limit                 UBIGINT,
    version_refusals              UBIGINT,
    tool_refusals                 UBIGINT,
    context_refusals              UBIGINT,
    extra                         JSON,              -- fields of the block this schema does not know
    schema_version                INTEGER,
    source_url                    VARCHAR,
    height                        BIGINT,
    fetched_at                    TIMESTAMPTZ,
    PRIMARY KEY (epoch, participant, model)
);
