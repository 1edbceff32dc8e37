-- poc_overload_gateway_misses: how many misses each gateway's accounting API counts for
-- each participant of epoch $epoch (the escrows' creation epoch), summed over models, to
-- compare with the chain's missed_requests. A gateway is the accounting URL up to
-- '/api/v1/' (one row per gateway and participant). misses = protocol_misses (the
-- timeouts applied, what the gateway says the chain records), timeout_applied when absent.
-- Reads: acct_participants.
SELECT participant,
       coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '') AS gateway,
       sum(coalesce(protocol_misses, timeout_applied))                          AS misses,
       list(DISTINCT model ORDER BY model)                                        AS models
FROM acct_participants
WHERE epoch = $epoch AND participant <> ''
GROUP BY ALL
ORDER BY participant, gateway;
