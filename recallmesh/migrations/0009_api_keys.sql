-- API keys (recallmesh/auth/keys.py). A key is shown once, at creation, as
-- rmk_<id>_<secret>; only the SHA-256 of the secret is kept. `namespaces` holds the key's
-- grants (exact namespaces, or prefix patterns ending in '*'), `scopes` its scopes.
CREATE TABLE api_keys (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    secret_sha256 bytea NOT NULL,
    namespaces    text[] NOT NULL,
    scopes        text[] NOT NULL CHECK (scopes <@ ARRAY['read', 'write', 'admin']),
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    text NOT NULL DEFAULT '',
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
