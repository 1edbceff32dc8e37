-- misstest_inputs: everything the chain's binomial miss test used for epoch $epoch, one row
-- per participant of ActiveParticipants(N) (= one epoch_performance_summary row), plus what
-- explains a zero reward that the test did not cause (chain-api.md sections 10 and 11).
--
-- Answers: for each participant, its inference_count / missed_requests (the test's inputs,
-- section 9.2), the rewarded_coins the chain paid, its exclusions (reason, height) and its
-- root validation weight. The epoch-level inputs (settlement p0, the epoch's heights for
-- the grace-epoch check, whether the epoch is settled, what was collected) are repeated on
-- every row so that one query carries them; they are NULL when not collected.
--
-- Reads: chain_performance, chain_params (purpose 'settlement', else 'epoch'),
--        chain_excluded, chain_validation_weights (model_id '' = root group),
--        chain_epochs, coverage (source 'chain').
-- Zero rows means the epoch's performance summary is not in the store.
WITH
perf AS (
    SELECT participant, inference_count, missed_requests, rewarded_coins, claimed
    FROM chain_performance
    WHERE epoch = $epoch
),
excl AS (
    SELECT participant,
           list(struct_pack(reason := reason, height := exclusion_height)
                ORDER BY exclusion_height NULLS LAST, reason) AS exclusions
    FROM chain_excluded
    WHERE epoch = $epoch
    GROUP BY participant
),
root AS (
    SELECT participant, weight, confirmation_weight
    FROM chain_validation_weights
    WHERE epoch = $epoch AND model_id = ''
),
cov AS (
    SELECT max(CASE WHEN item = 'excluded_participants' THEN status END) AS excluded_status,
           max(CASE WHEN item = 'epoch_group_data' THEN status END)      AS root_status
    FROM coverage
    WHERE source = 'chain' AND epoch = $epoch
),
ctx AS (
    SELECT
        ps.epoch IS NOT NULL                          AS has_settlement_params,
        ps.binom_test_p0                              AS settlement_binom_test_p0,
        ps.height                                     AS settlement_params_height,
        pe.epoch IS NOT NULL                          AS has_epoch_params,
        pe.binom_test_p0                              AS epoch_binom_test_p0,
        e.epoch IS NOT NULL                           AS has_epoch_row,
        e.settled,
        e.poc_start_height,
        e.next_poc_start_height,
        e.effective_height,
        e.next_effective_height,
        e.settlement_height,
        (SELECT count(*) FROM root)                                          AS root_weight_rows,
        (SELECT count(*) FROM chain_excluded WHERE epoch = $epoch)           AS excluded_rows,
        cov.excluded_status,
        cov.root_status
    FROM (SELECT 1) AS one
    LEFT JOIN chain_params ps ON ps.epoch = $epoch AND ps.purpose = 'settlement'
    LEFT JOIN chain_params pe ON pe.epoch = $epoch AND pe.purpose = 'epoch'
    LEFT JOIN chain_epochs e  ON e.epoch = $epoch
    CROSS JOIN cov
)
SELECT
    p.participant,
    p.inference_count,
    p.missed_requests,
    p.rewarded_coins,
    p.claimed,
    x.exclusions,                      -- NULL: no exclusion row (see excluded_status)
    r.participant IS NOT NULL AS has_root_weight_row,
    r.weight              AS root_weight,
    r.confirmation_weight AS root_confirmation_weight,
    ctx.*
FROM perf p
LEFT JOIN excl x ON x.participant = p.participant
LEFT JOIN root r ON r.participant = p.participant
CROSS JOIN ctx
ORDER BY p.participant;
