-- What the October 2026 gateway logs when it retires an escrow for its age, or leaves a
-- retired one unreplaced (gateway-logs.md 14.3; #1881, fixed by #1905):
--   escrow_epoch_retention_retire  escrow, creation_epoch, current_epoch, cutoff: an escrow of
--                                  an epoch older than the retention cutoff is retired
--   runtime_retired                with reason "epoch retention prune" (only that reason here)
--   escrow_storage_pruned          escrow, dir, newest_epoch, cutoff: its store is removed
--   escrow_depletion_replacement_skipped  old_escrow (as escrow), model, role, reason
--                                  (target_already_met), target: no replacement was minted
SELECT
    file_id, line_no, ts,
    name AS event,
    coalesce(escrow, TRY_CAST(fields->>'old_escrow' AS BIGINT)) AS escrow,
    fields->>'reason' AS reason,
    fields->>'model' AS model,
    fields->>'role' AS role,
    TRY_CAST(fields->>'creation_epoch' AS BIGINT) AS creation_epoch,
    TRY_CAST(fields->>'current_epoch' AS BIGINT) AS current_epoch,
    TRY_CAST(fields->>'cutoff' AS BIGINT) AS cutoff,
    TRY_CAST(fields->>'newest_epoch' AS BIGINT) AS newest_epoch,
    fields->>'dir' AS dir,
    TRY_CAST(fields->>'target' AS BIGINT) AS target,
    fields
FROM (SELECT * FROM log_events WHERE kind = 'event' AND name = 'escrow_epoch_retention_retire'
      UNION ALL SELECT * FROM log_events WHERE kind = 'event' AND name = 'escrow_storage_pruned'
      UNION ALL SELECT * FROM log_events WHERE kind = 'event' AND name = 'escrow_depletion_replacement_skipped'
      UNION ALL SELECT * FROM log_events WHERE kind = 'event' AND name = 'runtime_retired'
                                           AND fields->>'reason' = 'epoch retention prune')
