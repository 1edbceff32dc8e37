-- remints_holds: the hold lines of every escrow (gateway v4.1.2+, escrow_hold.go;
-- gateway-logs.md 14.2), in order: each start (escrow_hold_started, or escrow_hold_restored
-- after a restart: no start line, its on_hold_since carries the start), and each end
-- (escrow_hold_released, escrow_hold_unrecoverable, escrow_hold_expired). The analysis
-- pairs them into holds (remints.py, Holds).
--
-- Answers, per line: escrow, event, time and place, reason, the balances it logged
-- (balance, recoverable_in_flight, release_balance), on_hold_since, held_for (a Go
-- duration) and held_for_s, and what was in flight at an unrecoverable end.
-- Reads: log_escrow_holds.
SELECT escrow, event, ts, file_id::BIGINT * 1000000000000 + line_no AS pos,
       reason, balance, recoverable_in_flight, release_balance, on_hold_since, held_for, held_for_s,
       pending, pending_cost, started, started_cost, challenged, challenged_cost,
       overdue_pending, overdue_pending_cost, latest_pending_deadline
FROM log_escrow_holds
WHERE escrow IS NOT NULL
  AND event IN ('escrow_hold_started', 'escrow_hold_restored', 'escrow_hold_released',
                'escrow_hold_unrecoverable', 'escrow_hold_expired')
ORDER BY escrow, ts, pos;
