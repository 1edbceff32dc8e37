-- 012 watch readings: every reading of `auditor watch`, one row per participant, so that an
-- epoch's history of projections can be compared with its final verdict (`watch --backtest N`).
--   taken_at            when the reading was taken (UTC)
--   epoch, height       the running epoch and the chain height read
--   start_height, end_height  the heights its counters run over: [V(E), V(E+1))
--   progress            (height - start) / (end - start), in [0, 1]
--   p0                  the p0 the chain would use if the epoch ended now
--   requests_so_far, missed_so_far  chain counters plus the misses and nonces of escrows not
--                       yet settled on chain (missed_unsettled of them)
--   projected_*         the same at the epoch's end at the rate so far (an estimate)
--   critical_misses     the most misses the test allows at the projected count (NULL: exact path)
--   margin              critical_misses - projected_missed (NULL with it)
--   projected_verdict, verdict_now   pass | fail | no_requests
--   severity            the miss_test_at_risk finding: warn | error, NULL when none
CREATE TABLE watch_readings (
    taken_at            TIMESTAMPTZ NOT NULL,
    epoch               BIGINT NOT NULL,
    height              BIGINT NOT NULL,
    start_height        BIGINT NOT NULL,
    end_height          BIGINT NOT NULL,
    progress            DOUBLE NOT NULL,
    p0                  DOUBLE,
    participant         VARCHAR NOT NULL,
    requests_so_far     BIGINT NOT NULL,
    missed_so_far       BIGINT NOT NULL,
    missed_unsettled    BIGINT NOT NULL,
    projected_requests  BIGINT NOT NULL,
    projected_missed    BIGINT NOT NULL,
    critical_misses     BIGINT,
    margin              BIGINT,
    projected_verdict   VARCHAR NOT NULL,
    verdict_now         VARCHAR NOT NULL,
    severity            VARCHAR,
    PRIMARY KEY (epoch, height, participant, taken_at)
);
