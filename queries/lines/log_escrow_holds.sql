-- Escrow holds (gateway v4.1.2+, escrow_hold.go; gateway-logs.md 14.2): an escrow that cannot
-- currently afford work is held instead of retired, and each balance check resolves it. One
-- row per line of the hold family, typed:
--   escrow_hold_started        reason, balance, recoverable_in_flight, release_balance, on_hold_since
--   escrow_hold_restored       on_hold_since (a hold carried over a restart: no start line)
--   escrow_hold_released       reason (balance_recovered, no_replacement_model, rotation_disabled)
--   escrow_hold_unrecoverable  balances, held_for, and what was in flight (pending, started,
--                              challenged, overdue pending: counts and costs; the latest pending
--                              deadline, 'none' read as NULL); a replacement with reason low_balance follows
--   escrow_hold_expired        balance, recoverable_in_flight, held_for (older builds)
--   escrow_hold_top_up_created model, role, epoch, escrow, serving, held (an extra mint while held)
--   escrow_hold_top_up_failed, escrow_hold_persist_failed, escrow_hold_release_persist_failed,
--   escrow_hold_restore_*      error
--   escrow_balance_low         the periodic check that holds or replaces: balance, and the text
--                              after the em dash, read loosely (also when the dash is glued to the
--                              threshold or mangled): check_holds says it names a hold ("— holding
--                              or replacing"; older: "— deactivating ..."); its threshold is
--                              log_escrow_events'
-- held_for is a Go duration (1m0.2s, 10.002118s, 1h2m3s); held_for_s is it in seconds (NULL
-- when it is not one). on_hold_since is RFC 3339 (NULL when it does not read as a time).
SELECT
    file_id, line_no, ts,
    name AS event,
    escrow,
    fields->>'reason' AS reason,
    fields->>'model' AS model,
    fields->>'role' AS role,
    TRY_CAST(fields->>'epoch' AS BIGINT) AS epoch,
    TRY_CAST(fields->>'balance' AS HUGEINT) AS balance,
    TRY_CAST(fields->>'recoverable_in_flight' AS HUGEINT) AS recoverable_in_flight,
    TRY_CAST(fields->>'release_balance' AS HUGEINT) AS release_balance,
    TRY_CAST(fields->>'on_hold_since' AS TIMESTAMPTZ) AS on_hold_since,
    fields->>'held_for' AS held_for,
    CASE WHEN fields->>'held_for' IN ('0', '-0', '+0') THEN 0.0
         WHEN regexp_full_match(fields->>'held_for', '[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+')
         THEN (CASE WHEN fields->>'held_for' LIKE '-%' THEN -1 ELSE 1 END)
              * list_sum(list_transform(
                    regexp_extract_all(fields->>'held_for', '([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)'),
                    lambda t: CAST(regexp_extract(t, '^[0-9.]+') AS DOUBLE)
                        * CASE regexp_extract(t, '[a-zµμ]+$') WHEN 'h' THEN 3600 WHEN 'm' THEN 60 WHEN 's' THEN 1
                               WHEN 'ms' THEN 1e-3 WHEN 'ns' THEN 1e-9 ELSE 1e-6 END))
    END AS held_for_s,
    TRY_CAST(fields->>'pending' AS BIGINT) AS pending,
    TRY_CAST(fields->>'pending_cost' AS HUGEINT) AS pending_cost,
    TRY_CAST(fields->>'started' AS BIGINT) AS started,
    TRY_CAST(fields->>'started_cost' AS HUGEINT) AS started_cost,
    TRY_CAST(fields->>'challenged' AS BIGINT) AS challenged,
    TRY_CAST(fields->>'challenged_cost' AS HUGEINT) AS challenged_cost,
    TRY_CAST(fields->>'overdue_pending' AS BIGINT) AS overdue_pending,
    TRY_CAST(fields->>'overdue_pending_cost' AS HUGEINT) AS overdue_pending_cost,
    TRY_CAST(fields->>'latest_pending_deadline' AS TIMESTAMPTZ) AS latest_pending_deadline,
    TRY_CAST(fields->>'serving' AS BIGINT) AS serving,
    TRY_CAST(fields->>'held' AS BIGINT) AS held,
    fields->>'error' AS error,
    -- the tail: the em-dash text, or what follows the threshold's digits when the dash is glued or mangled
    CASE WHEN name = 'escrow_balance_low'
         THEN trim(regexp_replace(coalesce(fields->>'_text', regexp_extract(fields->>'threshold', '^[0-9]+(.*)$', 1), ''),
                                  '^\s*(\x{2014}|\x{2013}|--?|\x{e2}\S*)\s*', '')) END AS check_text,
    CASE WHEN name = 'escrow_balance_low'
         THEN coalesce(fields->>'_text', regexp_extract(fields->>'threshold', '^[0-9]+(.*)$', 1), '') ILIKE '%hold%'
    END AS check_holds,
    fields
-- by name, one branch each (log_escrow_events.sql says why)
FROM (SELECT * FROM log_events WHERE kind = 'event' AND name LIKE 'escrow\_hold\_%' ESCAPE '\'
      UNION ALL SELECT * FROM log_events WHERE kind = 'event' AND name = 'escrow_balance_low')
