-- race_primary(x, role, pos): x of a race's primary row, ONE RULE, an aggregate over the race's
-- attempts (GROUP BY its request): of the attempts whose role is 'primary', the one on the
-- first line (pos: file_id x 10^12 + line_no of its race_completed line), x as it is there
-- (NULL too). A race has two primary rows when one race line is stored twice (a copy collected
-- beside its log) or a nonce's race is logged twice; the pick must not depend on the order a
-- plan reads them. Every primary of a race has the request's primary nonce, so this is also
-- the first primary in race_place's order.
-- race_place(role, nonce, pos): where an attempt stands in its race's list: the primary first,
-- then the secondaries, then attempts without a role; among those by nonce (none last), then
-- by line (pos). The per-race list (queries/hedging_race_attempts.sql, whose first row is the
-- race's primary row for auditor/analyses/hedging.py) and the prediction rule's ties
-- (queries/hedging_predictions.sql) order by it.
-- Read by the views of attempts, races and requests; tests/test_race_primary.py
-- holds every reader to these.
CREATE OR REPLACE MACRO race_primary(x, role, pos) AS arg_min_null(x, pos) FILTER (WHERE role = 'primary');
CREATE OR REPLACE MACRO race_place(role, nonce, pos) AS
    {'role': CASE WHEN role = 'primary' THEN 0 WHEN role IS NOT NULL THEN 1 ELSE 2 END,
     'no_nonce': nonce IS NULL, 'nonce': coalesce(nonce, 0), 'pos': pos};
