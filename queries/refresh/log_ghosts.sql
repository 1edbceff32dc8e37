-- log_ghosts (views/log_ghosts.sql), brought up to date with the lines of
-- queries/refresh/changed.sql. A ghost probe's row is its line and the ghost dispositions of
-- its nonce within 120 s of it: the rows that can change are the new probes' and those of the
-- probes whose nonce has a new ghost disposition. They are worked out again over those probes
-- and every disposition of their nonces, and replace the kept ones.
CREATE OR REPLACE TEMP TABLE refresh_ghost_nonces AS
SELECT DISTINCT d.nonce FROM {store}.log_nonce_dispositions d SEMI JOIN refresh_lines n USING (file_id, line_no)
WHERE d.disposition = 'ghost' AND refresh_new_line(d.file_id, d.line_no);

CREATE OR REPLACE TEMP VIEW log_ghost_probes AS
SELECT * FROM {store}.log_ghost_probes g
WHERE g.nonce IN (SELECT nonce FROM refresh_ghost_nonces)
   OR refresh_new_line(g.file_id, g.line_no)
      AND EXISTS (SELECT 1 FROM refresh_lines n WHERE n.file_id = g.file_id AND n.line_no = g.line_no);

CREATE OR REPLACE TEMP VIEW log_nonce_dispositions AS
SELECT * FROM {store}.log_nonce_dispositions WHERE nonce IN (SELECT nonce FROM temp.log_ghost_probes);

DELETE FROM {store}.derived_log_ghosts WHERE nonce IN (SELECT nonce FROM refresh_ghost_nonces);

INSERT INTO {store}.derived_log_ghosts BY NAME SELECT * FROM {store}.log_ghosts;
