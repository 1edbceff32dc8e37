-- poc_overload_accounting: what the gateway's accounting API says about the nonces it
-- dispatched while the phase gate reported a confirmation PoC (dispatch_phase
-- 'confirmation_poc'), for the escrows created in epoch $epoch, per participant, model,
-- escrow and slot: disposition, no-send reason, timeout outcome and count. The API keeps
-- counters without times, so this covers every CPoC of the epoch together, not one window.
-- miss_kind, miss: what the counter's nonces are by the miss rule (views/nonce_miss.sql; the
-- API records a timeout's outcome when it is evaluated: a counter without one is pending).
-- Reads: acct_counters.
SELECT participant, model, escrow_id, slot_id, disposition, no_send_reason, timeout_outcome,
       nonce_miss(disposition, timeout_outcome, false) AS miss_kind,
       is_miss(nonce_miss(disposition, timeout_outcome, false)) AS miss,
       sum(count) AS count
FROM acct_counters
WHERE epoch = $epoch AND dispatch_phase = 'confirmation_poc'
GROUP BY ALL
ORDER BY ALL;
