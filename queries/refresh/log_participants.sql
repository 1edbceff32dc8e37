-- log_participants (views/log_participants.sql), brought up to date with the lines of
-- queries/refresh/changed.sql: its rows are distinct addresses, so the view over the new
-- lines alone (the line tables narrowed to them) gives the addresses to add, less those it
-- already holds.
CREATE OR REPLACE TEMP VIEW log_race_lines AS
SELECT r.* FROM {store}.log_race_lines r SEMI JOIN refresh_lines n USING (file_id, line_no)
WHERE refresh_new_line(r.file_id, r.line_no);

CREATE OR REPLACE TEMP VIEW log_nonce_dispositions AS
SELECT d.* FROM {store}.log_nonce_dispositions d SEMI JOIN refresh_lines n USING (file_id, line_no)
WHERE refresh_new_line(d.file_id, d.line_no);

INSERT INTO {store}.derived_log_participants BY NAME
SELECT * FROM {store}.log_participants p
WHERE NOT EXISTS (SELECT 1 FROM {store}.derived_log_participants k WHERE k.address = p.address);
