-- poc_overload_gateway_misses: how many misses each gateway's accounting API counts for
-- each participant of epoch $epoch (the escrows' creation epoch), summed over models, to
-- compare with the chain's missed_requests. One row per gateway and participant: gateway_id
-- is the stored gateway (migration 016: the redacted --accounting base URL, or a replay's
-- recording), gateway the URL it answered from up to '/api/v1/' (as printed). misses =
-- protocol_misses (the timeouts applied, what the gateway says the chain records),
-- timeout_applied when absent. A participant's misses over the gateways are their sum: each
-- gateway counts the nonces of its own escrows.
-- Reads: acct_participants.
SELECT participant, gateway AS gateway_id,
       coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '') AS gateway,
       sum(coalesce(protocol_misses, timeout_applied))                          AS misses,
       list(DISTINCT model ORDER BY model)                                        AS models
FROM acct_participants
WHERE epoch = $epoch AND participant <> ''
GROUP BY ALL
ORDER BY participant, gateway;
