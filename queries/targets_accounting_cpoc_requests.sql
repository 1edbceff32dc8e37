-- targets_accounting_cpoc_requests: per gateway and model, the requests the gateway
-- dispatched in phase confirmation_poc (every counter of that dispatch phase but ghost and
-- protocol_only: those sent nothing to a host) on the escrows created in epochs $first to
-- $last (the API counts by escrow creation epoch, and carries no times: every CPoC of those
-- epochs together). The network-demand estimate without logs divides them by the windows'
-- durations (analyses/targets.py, Little's law), summed over the gateways: each gateway counts
-- its own escrows' requests (a gateway is stored once, however often it was given: 016).
-- source: the answering URL's scheme and host, as printed; gateway: the stored gateway.
-- Reads: acct_counters.
SELECT regexp_extract(source_url, '^(https?://[^/]+)', 1) AS source, gateway, model,
       list(DISTINCT epoch ORDER BY epoch) AS epochs,
       CAST(sum(count) AS BIGINT) AS requests
FROM acct_counters
WHERE dispatch_phase = 'confirmation_poc' AND disposition NOT IN ('ghost', 'protocol_only')
  AND epoch BETWEEN $first AND $last AND model <> ''
GROUP BY ALL
ORDER BY source, gateway, model;
