-- log_ghosts (views/log_ghosts.sql), brought up to date with the lines of
-- queries/refresh/changed.sql. A ghost probe's row is its line and the ghost dispositions of
-- its nonce within 120 s of it: the rows that can change are the new probes' and those of the
-- probes that a new ghost disposition of their nonce lies within 120 s of. They are worked out
-- again over those probes and the dispositions of their nonces within 120 s of them, and
-- replace the kept ones. (Nonces repeat across escrows and days: the times, which ts zone
-- maps narrow to the day, keep the other days' probes and dispositions out.)
CREATE OR REPLACE TEMP TABLE refresh_ghost_dispositions AS
SELECT d.nonce, d.ts FROM {store}.log_nonce_dispositions d SEMI JOIN refresh_lines n USING (file_id, line_no)
WHERE d.disposition = 'ghost' AND d.escrow IS NOT NULL AND d.ts IS NOT NULL
  AND refresh_new_line(d.file_id, d.line_no);

SET VARIABLE refresh_ghosts_from = (SELECT min(ts) - INTERVAL 120 SECOND FROM refresh_ghost_dispositions);
SET VARIABLE refresh_ghosts_to = (SELECT max(ts) + INTERVAL 120 SECOND FROM refresh_ghost_dispositions);

CREATE OR REPLACE TEMP TABLE refresh_ghost_probes AS
SELECT g.* FROM {store}.log_ghost_probes g
WHERE g.ts BETWEEN getvariable('refresh_ghosts_from') AND getvariable('refresh_ghosts_to')
  AND EXISTS (SELECT 1 FROM refresh_ghost_dispositions d
              WHERE d.nonce = g.nonce AND d.ts BETWEEN g.ts - INTERVAL 120 SECOND AND g.ts + INTERVAL 120 SECOND)
UNION
SELECT g.* FROM {store}.log_ghost_probes g
WHERE refresh_new_line(g.file_id, g.line_no)
  AND EXISTS (SELECT 1 FROM refresh_lines n WHERE n.file_id = g.file_id AND n.line_no = g.line_no);

SET VARIABLE refresh_probes_from = (SELECT min(ts) - INTERVAL 120 SECOND FROM refresh_ghost_probes);
SET VARIABLE refresh_probes_to = (SELECT max(ts) + INTERVAL 120 SECOND FROM refresh_ghost_probes);

CREATE OR REPLACE TEMP VIEW log_ghost_probes AS SELECT * FROM refresh_ghost_probes;

CREATE OR REPLACE TEMP VIEW log_nonce_dispositions AS
SELECT * FROM {store}.log_nonce_dispositions
WHERE ts BETWEEN getvariable('refresh_probes_from') AND getvariable('refresh_probes_to')
  AND nonce IN (SELECT nonce FROM refresh_ghost_probes);

DELETE FROM {store}.derived_log_ghosts k
WHERE EXISTS (SELECT 1 FROM refresh_ghost_probes g WHERE g.file_id = k.file_id AND g.line_no = k.line_no);

INSERT INTO {store}.derived_log_ghosts BY NAME SELECT * FROM {store}.log_ghosts;
