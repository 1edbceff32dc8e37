-- How the October 2026 gateway routed a request to an escrow, or could not (gateway-logs.md
-- 14.1 and 14.3). One row per line:
--   gateway_escrow_refused_funding       the pooled route offered the request to an escrow that
--                                        cannot fund its reservation: request, escrow, model,
--                                        escrows_refused (so far)
--   gateway_all_escrows_refused_funding  none could: request, model, escrows_refused,
--                                        retry_after_seconds, error; the client gets 503 with
--                                        Retry-After and no escrow is retired (#1799's fix)
--   gateway_zero_capacity                of the October shape only ("all N affordable escrow(s)
--                                        at zero capacity (K skipped as unable to fund the
--                                        request), returning 503"): candidates (affordable),
--                                        skipped_unfundable, status
--   gateway_devshard_*                   the per-escrow route /devshard/<id>/... (request_received,
--                                        runtime_selected, limiter_*, cache_*, unavailable with
--                                        its reason: inactive, finalize_in_flight, on_hold,
--                                        phase=...): step (the stage name without
--                                        gateway_devshard_), request, escrow, reason, path. The
--                                        pooled route's affordability pre-filter does not cover
--                                        it, so a request too large for the escrow still reaches it.
-- reservation, input_bytes and max_tokens when the line gives them (reservation /
-- reserved_cost; input_bytes / input_length: the body length, which enters the reservation).
SELECT
    file_id, line_no, ts, request,
    name AS event,
    CASE WHEN name LIKE 'gateway\_devshard\_%' ESCAPE '\' THEN substr(name, length('gateway_devshard_') + 1) END
        AS step,
    escrow,
    fields->>'model' AS model,
    fields->>'reason' AS reason,
    fields->>'path' AS path,
    TRY_CAST(fields->>'escrows_refused' AS INTEGER) AS escrows_refused,
    TRY_CAST(fields->>'retry_after_seconds' AS BIGINT) AS retry_after_seconds,
    coalesce(TRY_CAST(fields->>'reservation' AS HUGEINT), TRY_CAST(fields->>'reserved_cost' AS HUGEINT)) AS reservation,
    coalesce(TRY_CAST(fields->>'input_bytes' AS BIGINT), TRY_CAST(fields->>'input_length' AS BIGINT)) AS input_bytes,
    TRY_CAST(fields->>'max_tokens' AS BIGINT) AS max_tokens,
    TRY_CAST(fields->>'candidates' AS INTEGER) AS candidates,
    TRY_CAST(fields->>'skipped_unfundable' AS INTEGER) AS skipped_unfundable,
    TRY_CAST(fields->>'status' AS INTEGER) AS status,
    fields->>'error' AS error,
    fields
FROM (SELECT * FROM log_events WHERE name = 'gateway_escrow_refused_funding'
      UNION ALL SELECT * FROM log_events WHERE name = 'gateway_all_escrows_refused_funding'
      UNION ALL SELECT * FROM log_events WHERE name = 'gateway_zero_capacity'
                                           AND fields->>'skipped_unfundable' IS NOT NULL
      UNION ALL SELECT * FROM log_events WHERE name LIKE 'gateway\_devshard\_%' ESCAPE '\')
