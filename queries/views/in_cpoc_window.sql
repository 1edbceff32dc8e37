-- in_cpoc_window(t, w_start, w_end): whether the time t is in a confirmation PoC window or
-- one of its phases, [w_start, w_end] with both ends in: the one boundary rule of the cPoC
-- window [trigger, val_end] and of its phases (grace, generation, validation: the view of
-- the windows names their edges). Unlike a --since/--until range [since, until), its last block
-- is in it: inference resumes only after val_end. A NULL bound (a block time not collected)
-- is NULL, never true: a window that cannot be placed in time holds nothing.
-- overlaps_cpoc_window(a_start, a_end, w_start, w_end): whether something running from
-- a_start to a_end (an attempt) meets the window, by the same rule: it ends in or after
-- the window's start and starts in or before its end.
-- The Python that tests rows already read (auditor/heights.py: in_cpoc_window,
-- overlaps_cpoc_window, covers_cpoc_window) is held to these by tests/test_cpoc_window_rule.py.
CREATE OR REPLACE MACRO in_cpoc_window(t, w_start, w_end) AS
    t >= CAST(w_start AS TIMESTAMPTZ) AND t <= CAST(w_end AS TIMESTAMPTZ);
CREATE OR REPLACE MACRO overlaps_cpoc_window(a_start, a_end, w_start, w_end) AS
    a_end >= CAST(w_start AS TIMESTAMPTZ) AND a_start <= CAST(w_end AS TIMESTAMPTZ);
