-- in_range(t, since, until): whether the time t is in [since, until), half-open: the rule of
-- the queries over a range a user gives (--since/--until) or an epoch's span (the hedging_*
-- queries). A confirmation PoC window is closed instead, [trigger, val_end] with its last block
-- in: the queries over one (poc_overload_ghosts, poc_overload_attempts,
-- targets_demand_attempts) call in_cpoc_window / overlaps_cpoc_window (views/in_cpoc_window.sql).
-- Here a NULL bound is open, and a NULL t
-- (a race or line without a time) is in the range only when both bounds are open (NULL, never
-- true, when one is given: a WHERE or FILTER leaves it out). Written as the two comparisons,
-- not wrapped, so that DuckDB still pushes a bound down into a table scan. A macro, not a
-- view: the queries call it with their $since and $until.
CREATE OR REPLACE MACRO in_range(t, since, until) AS
    (since IS NULL OR t >= CAST(since AS TIMESTAMPTZ)) AND (until IS NULL OR t < CAST(until AS TIMESTAMPTZ));
