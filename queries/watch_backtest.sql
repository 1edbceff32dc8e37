-- watch_backtest: what `auditor watch` said about epoch $epoch while it ran, per participant
-- (`auditor watch --backtest N` sets it beside the settled verdict of the miss test).
--
-- Answers: how many readings there were, the first one that warned (miss_test_at_risk at
-- warn or error: its time, height, progress and severity), how many readings warned, and
-- the last reading's projection.
-- Reads: watch_readings (queries/schema/012_watch_readings.sql).
-- Zero rows means no reading of the epoch is stored.
WITH r AS (
    SELECT *, row_number() OVER (PARTITION BY participant ORDER BY height DESC, taken_at DESC) AS from_last
    FROM watch_readings
    WHERE epoch = $epoch
),
first_warn AS (
    SELECT participant, taken_at, height, progress, severity,
           row_number() OVER (PARTITION BY participant ORDER BY height, taken_at) AS n
    FROM r
    WHERE severity IS NOT NULL
)
SELECT r.participant,
       count(*)                                                  AS readings,
       count(*) FILTER (WHERE r.severity IS NOT NULL)            AS warned_readings,
       any_value(f.taken_at)                                     AS first_warned_at,
       any_value(f.height)                                       AS first_warned_height,
       any_value(f.progress)                                     AS first_warned_progress,
       any_value(f.severity)                                     AS first_warned_severity,
       min(r.height)                                             AS first_height,
       max(r.height)                                             AS last_height,
       any_value(r.projected_verdict) FILTER (WHERE r.from_last = 1) AS last_projected_verdict
FROM r
LEFT JOIN first_warn f ON f.participant = r.participant AND f.n = 1
GROUP BY r.participant
ORDER BY r.participant;
