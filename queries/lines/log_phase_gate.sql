-- `chain phase gate:` lines (section 3.4 and 7.1): PoC phase transitions and preserved sets.
SELECT
    file_id, line_no, ts,
    fields->>'_event' AS gate_event,              -- phase active | phase inactive | preserved participants loaded | ...
    nullif(fields->>'reason', '') AS reason,      -- poc | confirmation_poc | NULL
    fields->>'chain_phase' AS chain_phase,
    fields->>'confirmation_poc_phase' AS confirmation_poc_phase,
    TRY_CAST(fields->>'epoch' AS BIGINT) AS epoch,
    TRY_CAST(fields->>'block_height' AS BIGINT) AS block_height,
    TRY_CAST(fields->>'requests_blocked' AS BOOLEAN) AS requests_blocked,
    TRY_CAST(fields->>'max_attempts' AS INTEGER) AS max_attempts,
    TRY_CAST(fields->>'count' AS INTEGER) AS preserved_count,
    CASE WHEN fields->>'participants' IS NOT NULL
         THEN list_filter(string_split(fields->>'participants', ','), lambda x: x <> '') END AS preserved_labels,
    TRY_CAST(fields->>'excluded_count' AS INTEGER) AS excluded_count,
    CASE WHEN fields->>'excluded_participants' IS NOT NULL
         THEN list_filter(string_split(fields->>'excluded_participants', ','), lambda x: x <> '') END AS excluded_labels,
    fields
FROM log_events
WHERE kind = 'event' AND name = 'chain_phase_gate'
