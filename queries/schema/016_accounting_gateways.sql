-- 016 accounting gateways: every acct_* row says which gateway's accounting API it came from,
-- so that a store holds several gateways' accounting of the same epoch side by side (each
-- `--accounting URL` is its own gateway: the public list on tracker.gonka.pro/gateway names
-- many; issues 33 and 36).
--
--   gateway  the gateway's identity: the base URL given to --accounting, redacted as
--            auditor/redact.py does (no userinfo, no credential, no key-like path segment),
--            without its query and trailing '/' (sources/accounting.py: gateway_id). The API
--            says nothing of itself (gateway-accounting.md section 1), so the URL is all there is.
--            A --replay recording's is 'replay:DIR' (its loopback port changes every run).
--
-- Rows stored before this migration came from one gateway per epoch (several --accounting URLs
-- were failover of one source): their gateway is worked out of their source_url, the URL the
-- API answered, up to '/api/v1/' (what queries/poc_overload_gateway_misses.sql already did),
-- '' when no URL was kept. A store collected before is thus one gateway per epoch, and reads
-- as before.
--
-- The keys gain the gateway: acct_epochs (epoch, gateway), acct_participants and
-- acct_capabilities (epoch, gateway, participant, model). Re-collecting epoch E from a gateway
-- replaces that gateway's rows of E only (and rows of E stored before 016: they were the one
-- gateway of E). DuckDB cannot add a column to a key, so the three keyed tables are made again
-- (empty and keyed first, then filled: DuckDB adds no key in a transaction that has written
-- rows); the others gain the column (not declared NOT NULL: DuckDB cannot add that after the
-- rows were updated in the same transaction; the collector always writes it).

-- First the three keyed tables, empty (DuckDB adds no key once the transaction has written rows)
ALTER TABLE acct_epochs RENAME TO acct_epochs_015;
CREATE TABLE acct_epochs AS SELECT *, ''::VARCHAR AS gateway FROM acct_epochs_015 LIMIT 0;
ALTER TABLE acct_epochs ALTER gateway SET NOT NULL;
ALTER TABLE acct_epochs ALTER epoch SET NOT NULL;
ALTER TABLE acct_epochs ADD PRIMARY KEY (epoch, gateway);
ALTER TABLE acct_participants RENAME TO acct_participants_015;
CREATE TABLE acct_participants AS SELECT *, ''::VARCHAR AS gateway FROM acct_participants_015 LIMIT 0;
ALTER TABLE acct_participants ALTER gateway SET NOT NULL;
ALTER TABLE acct_participants ALTER epoch SET NOT NULL;
ALTER TABLE acct_participants ALTER participant SET NOT NULL;
ALTER TABLE acct_participants ALTER model SET NOT NULL;
ALTER TABLE acct_participants ADD PRIMARY KEY (epoch, gateway, participant, model);
ALTER TABLE acct_capabilities RENAME TO acct_capabilities_015;
CREATE TABLE acct_capabilities AS SELECT *, ''::VARCHAR AS gateway FROM acct_capabilities_015 LIMIT 0;
ALTER TABLE acct_capabilities ALTER gateway SET NOT NULL;
ALTER TABLE acct_capabilities ALTER epoch SET NOT NULL;
ALTER TABLE acct_capabilities ALTER participant SET NOT NULL;
ALTER TABLE acct_capabilities ALTER model SET NOT NULL;
ALTER TABLE acct_capabilities ADD PRIMARY KEY (epoch, gateway, participant, model);

-- then their rows
INSERT INTO acct_epochs SELECT *, coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '') FROM acct_epochs_015;
DROP TABLE acct_epochs_015;
INSERT INTO acct_participants SELECT *, coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '') FROM acct_participants_015;
DROP TABLE acct_participants_015;
INSERT INTO acct_capabilities SELECT *, coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '') FROM acct_capabilities_015;
DROP TABLE acct_capabilities_015;

ALTER TABLE acct_escrow_nonces ADD COLUMN gateway VARCHAR;
UPDATE acct_escrow_nonces SET gateway = coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '');

ALTER TABLE acct_counters ADD COLUMN gateway VARCHAR;
UPDATE acct_counters SET gateway = coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '');

ALTER TABLE acct_slots ADD COLUMN gateway VARCHAR;
UPDATE acct_slots SET gateway = coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '');

ALTER TABLE acct_findings ADD COLUMN gateway VARCHAR;
UPDATE acct_findings SET gateway = coalesce(regexp_extract(source_url, '^(.*?)/api/v1/', 1), source_url, '');

-- coverage: the accounting rows say which gateway they are of (NULL for the other sources), so
-- one gateway's collection replaces its own coverage rows only. Rows stored before are of no
-- known gateway (''): the next collection from any gateway replaces them, the epoch list's too
-- (accounting._replace_coverage).
ALTER TABLE coverage ADD COLUMN gateway VARCHAR;
UPDATE coverage SET gateway = '' WHERE source = 'accounting';

-- acct_legacy_epochs: the epochs whose accounting was stored before this migration. Their rows
-- are the one gateway the epoch had then, named as well as their source_url allows (a replay's
-- port, a redirect's target may not be the base URL given today), so collecting such an epoch
-- again from ANY gateway replaces them, as it did before, and takes the epoch off this list.
CREATE TABLE acct_legacy_epochs (epoch BIGINT PRIMARY KEY);
INSERT INTO acct_legacy_epochs
    SELECT DISTINCT epoch FROM acct_participants UNION SELECT epoch FROM acct_epochs;
