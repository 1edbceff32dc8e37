-- Coverage of epoch $epoch: per source, how many of the items asked for were
-- obtained, and what is missing with the reason.
-- Reads: coverage.
SELECT source,
       count(*) FILTER (WHERE status = 'ok')            AS ok,
       count(*) FILTER (WHERE status <> 'ok')           AS not_ok,
       list(item || ': ' || coalesce(detail, status) ORDER BY item) FILTER (WHERE status <> 'ok') AS missing
FROM coverage
WHERE epoch = $epoch
GROUP BY source
ORDER BY source;
