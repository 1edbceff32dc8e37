-- remints_temp_retirements: when the rotator retired a temp bridge escrow (escrow_rotation_settling
-- with reason "escrow rotation temp retired", gateway-logs.md 6.3 and 6.4). The finish_regular
-- pass that mints an epoch's regular escrows retires the bridge escrows of the epoch before, so
-- a pass of regular mints next to one of these is the epoch-start rotation, even where the logs
-- show no phase-gate line of the epoch's start.
-- Answers: one row per retirement line: its time and escrow.
-- Reads: log_escrow_events.
SELECT ts, escrow
FROM log_escrow_events
WHERE event = 'escrow_rotation_settling' AND reason LIKE '%temp retired%' AND ts IS NOT NULL
ORDER BY ts, escrow;
