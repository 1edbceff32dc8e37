-- attempts (views/attempts.sql), brought up to date with the lines of queries/refresh/changed.sql.
-- An attempt's row is made from its race_completed line, its own lines (by escrow and nonce)
-- and its request's race lines and first decision. So the rows that can change are those
-- of the changed requests, and of the attempts without request= that are new or have new
-- lines: the view is worked out again over just their lines (the line tables narrowed by
-- temporary views of the same name, dropped after; the race lines read once, into a table,
-- as the view reads them twice), and those rows replace the kept ones.
CREATE OR REPLACE TEMP TABLE refresh_race_lines AS
SELECT * FROM {store}.log_race_lines WHERE request IN (SELECT request FROM refresh_requests)
UNION ALL
SELECT * FROM {store}.log_race_lines r
WHERE r.request IS NULL
  AND (EXISTS (SELECT 1 FROM refresh_nonces n WHERE n.escrow = r.escrow AND n.nonce = r.nonce)
       OR refresh_new_line(r.file_id, r.line_no)
          AND EXISTS (SELECT 1 FROM refresh_lines n WHERE n.file_id = r.file_id AND n.line_no = r.line_no));

CREATE OR REPLACE TEMP VIEW log_race_lines AS SELECT * FROM refresh_race_lines;

CREATE OR REPLACE TEMP VIEW log_attempt_lines AS
SELECT l.* FROM {store}.log_attempt_lines l
SEMI JOIN (SELECT DISTINCT escrow, nonce FROM refresh_race_lines) k USING (escrow, nonce);

CREATE OR REPLACE TEMP VIEW log_hedge_decisions AS
SELECT * FROM {store}.log_hedge_decisions WHERE request IN (SELECT request FROM refresh_requests);

DELETE FROM {store}.derived_attempts d
WHERE d.request IN (SELECT request FROM refresh_requests)
   OR (d.request IS NULL AND EXISTS (SELECT 1 FROM refresh_nonces n WHERE n.escrow = d.escrow AND n.nonce = d.nonce));

INSERT INTO {store}.derived_attempts BY NAME SELECT * FROM {store}.attempts;
