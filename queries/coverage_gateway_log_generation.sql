-- coverage_gateway_log_generation: which gateway generation the stored lines point to, by
-- the line shapes only each one writes (gateway-logs.md 13.3 and 14): per generation and
-- shape, how many lines.
--   hold_era        devshardctl of October 2026 (v4.1.2 and later): the escrow-hold family,
--                   the funding refusals, the retention retirements, the per-escrow route
--                   family (gateway_devshard_*), the zero-capacity 503 that counts affordable
--                   escrows, escrow_balance_low "— holding or replacing"
--   september       devshardctl of September 2026 (the #1799 report's commit and before):
--                   escrow_balance_low "— deactivating ..." (the check retires at once)
--   successor_json  the successor gateway's JSON records (phrase messages; not read: the
--                   parser rejects them as successor_json)
-- Any other stored line is devshardctl's and fits either devshardctl generation.
-- Reads: log_escrow_holds, log_escrow_retirements, log_escrow_routing, log_rejects.
SELECT 'hold_era' AS generation, event AS shape, count(*) AS lines
FROM log_escrow_holds WHERE event <> 'escrow_balance_low' GROUP BY event
UNION ALL
SELECT 'hold_era', 'escrow_balance_low (text names a hold)', count(*)
FROM log_escrow_holds WHERE event = 'escrow_balance_low' AND check_holds HAVING count(*) > 0
UNION ALL
SELECT 'hold_era', CASE WHEN event = 'runtime_retired' THEN 'runtime_retired (epoch retention prune)' ELSE event END,
       count(*)
FROM log_escrow_retirements GROUP BY event
UNION ALL
SELECT 'hold_era', CASE WHEN event = 'gateway_zero_capacity' THEN 'gateway_zero_capacity (affordable escrows, 503)'
                        WHEN step IS NOT NULL THEN 'gateway_devshard_*' ELSE event END AS shape, count(*)
FROM log_escrow_routing GROUP BY shape
UNION ALL
SELECT 'september', 'escrow_balance_low (text names no hold)', count(*)
FROM log_escrow_holds WHERE event = 'escrow_balance_low' AND NOT check_holds HAVING count(*) > 0
UNION ALL
SELECT 'successor_json', 'JSON records with phrase messages (rejected)', sum(lines)
FROM log_rejects WHERE reason = 'successor_json' HAVING sum(lines) > 0
ORDER BY generation, shape;
