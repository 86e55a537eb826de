"""When a sensitive memory may be returned, under either ranking: the SQL condition that the
question asks for what only a secret holds, and the question's words it reads
(docs/decisions/0015-secrets-on-what-only-they-hold.md)."""

from __future__ import annotations

from recallmesh.wire.filters import live


def asks_for_secret(vector: str, terms: str) -> str:
    """The SQL condition under which a sensitive memory (its search vector `vector`) may be
    returned for a question (its content words' lexemes, the text[] `terms`: CONTENT_LEXEMES):
    the question asks for something only a secret holds. One of the question's words, or two
    of them together, are in the memory's own text (content and keywords: tsvector weights A
    and B, not the tags or category it was filed under) and in no live memory of the namespace
    that is not sensitive (their postings, tags included). "How much sertraline ...", "... VPN
    password" or "home alarm code" (no ordinary memory speaks of an alarm's code) ask for a
    secret; a name, a tag or an everyday word the secret shares with the namespace's ordinary
    memories, or a name and a word that one of them holds together ("Where is Jonas's home?"
    beside "Jonas works from home"), asks for nothing of the kind, however much of the question
    it makes up (docs/decisions/0015-secrets-on-what-only-they-hold.md). Needs %(ns)s."""
    return f"""EXISTS (
        SELECT 1
        FROM (SELECT array_agg(own) AS asked
              FROM unnest(tsvector_to_array(ts_filter({vector}, '{{a,b}}'))) AS own
              WHERE own = ANY({terms})) o
        CROSS JOIN LATERAL unnest(o.asked) AS x
        CROSS JOIN LATERAL unnest(o.asked) AS y
        WHERE x <= y AND NOT EXISTS (
            SELECT 1 FROM memory_lexemes px
            JOIN memory_lexemes py
              ON py.namespace = px.namespace AND py.lexeme = y AND py.memory_id = px.memory_id
            JOIN memories m2 ON m2.id = px.memory_id
            WHERE px.namespace = %(ns)s AND px.lexeme = x AND NOT m2.is_sensitive
              AND {live('m2')}))"""


# The question's words for `asks_for_secret`: its lexemes less the function words of every
# language Postgres ships a stop list for (a snowball dictionary maps a stop word to no lexeme):
# the English configuration keeps "die", "del" or "als" as words, and no secret is asked for by
# them.
CONTENT_LEXEMES = """tsvector_to_array(to_tsvector('english', coalesce((
    SELECT string_agg(w, ' ')
    FROM unnest(tsvector_to_array(to_tsvector('simple', %(query)s))) AS w
    WHERE NOT EXISTS (SELECT 1 FROM pg_ts_dict d
                      WHERE d.dictname ~ '_stem$' AND ts_lexize(d.oid::regdictionary, w) = '{}')
), '')))"""
