-- Issue 54. The deployment's secret for signing page tokens: made here, once, from the
-- server's strong random source (gen_random_uuid: 122 random bits each, 244 together), so
-- every gateway on this database shares it with nothing to configure, and no caller can
-- make a token of its own. Read by the gateway at start (recallmesh/gateway/listing.py).
CREATE TABLE server_secrets (
    name   text  PRIMARY KEY,
    secret bytea NOT NULL CHECK (length(secret) >= 32)
);
INSERT INTO server_secrets (name, secret)
VALUES ('page_token', uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- Who imported a version (Import), beside who replaced it (replaced_by, as the export said):
-- an imported history says so. Empty for a version an Update here kept.
ALTER TABLE memory_versions ADD COLUMN imported_by text NOT NULL DEFAULT '';
