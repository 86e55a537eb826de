"""Who is calling and what it may touch: API keys, JWTs, namespace grants, scopes."""
