"""Lexical retrieval leg: Postgres full-text search behind the RetrieverService contract."""
