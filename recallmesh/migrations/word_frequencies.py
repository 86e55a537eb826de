"""The languages' word frequencies in the database: `language_lexemes` (migration 0019),
loaded from the wordfreq package (Apache-2.0 code; its frequency data CC BY-SA 4.0, from
Wikipedia, subtitles, news, books, the web and Twitter/Reddit; see its README) once per list
(docs/decisions/0021-words-of-the-language.md).

Every word that one of LANGUAGES uses at least MIN_FREQUENCY of the time is turned into its
lexeme by the english text search configuration, as memories and queries are, in Postgres
itself (so a word and a memory's term meet exactly); the words that share a lexeme have their
frequencies summed within a language, and a lexeme keeps the highest frequency of any
language. The lexical leg reads it: a term that is a word of a language is never "corrected"
as a misspelling (SPELLED in recallmesh/services/lexical/spelling.py)."""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import Any

import psycopg

log = logging.getLogger("recallmesh.migrations")

# The languages whose words the lexical leg knows: those written in the Latin script with a
# snowball stemmer in Postgres and a wordfreq list. Chinese, Japanese and Korean are searched
# as character pairs (recallmesh/shared/cjk.py), which no word list counts.
LANGUAGES = ("en", "de", "es", "fr", "it", "pt", "nl")
# A word a language uses at least once in a million words (wordfreq's Zipf 3) is a word of it.
MIN_FREQUENCY = 1e-6
_WORDLIST = "best"
# This process's last load, by source and server version: the next database is given the same
# rows without reading the package's lists and stemming every word again (tests, a fleet).
_LOADED: dict[tuple[str, str], list[tuple[str, float]]] = {}


def source() -> str:
    """What a load from this installation holds: the package's version, the list, the
    languages and the floor (a change of any reloads the table)."""
    return (f"wordfreq {version('wordfreq')} {_WORDLIST} {','.join(LANGUAGES)} "
            f">= {MIN_FREQUENCY:g}")


def ensure_language_lexemes(conn: psycopg.Connection) -> int:
    """Load `language_lexemes` unless it already holds this installation's source; the rows
    it holds. One transaction: a reader sees the old list or the new one, never half."""
    wanted = source()
    row = conn.execute("SELECT source, words FROM language_lexemes_source").fetchone()
    if row and row[0] == wanted:
        return int(row[1])
    import wordfreq  # the server extra's; only a load needs it

    with conn.transaction():
        conn.execute("LOCK TABLE language_lexemes_source IN EXCLUSIVE MODE")
        row = conn.execute("SELECT source, words FROM language_lexemes_source").fetchone()
        if row and row[0] == wanted:  # another process loaded it meanwhile
            return int(row[1])
        conn.execute("TRUNCATE language_lexemes")
        server = str(conn.info.server_version)
        rows = _LOADED.get((wanted, server))
        if rows is None:
            _load_words(conn, wordfreq)
            rows = [(str(lexeme), float(frequency)) for lexeme, frequency in conn.execute(
                "SELECT lexeme, frequency FROM language_lexemes")]
            _LOADED.clear()
            _LOADED[(wanted, server)] = rows
        else:
            with conn.cursor().copy("COPY language_lexemes (lexeme, frequency) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        lexemes = conn.execute("SELECT count(*) FROM language_lexemes").fetchone()
        count = int(lexemes[0]) if lexemes else 0
        conn.execute("""
            INSERT INTO language_lexemes_source (source, words) VALUES (%s, %s)
            ON CONFLICT (only_row) DO UPDATE SET source = excluded.source,
                words = excluded.words, loaded_at = now()""", (wanted, count))
    conn.execute("ANALYZE language_lexemes")
    log.info("language lexemes loaded", extra={"source": wanted, "lexemes": count})
    return count


def _load_words(conn: psycopg.Connection, wordfreq: Any) -> None:
    """Every listed word's lexeme into language_lexemes, with its frequency (module doc)."""
    conn.execute("CREATE TEMP TABLE language_words (language text, word text, "
                 "frequency float8) ON COMMIT DROP")
    with conn.cursor().copy("COPY language_words FROM STDIN") as copy:
        for language in LANGUAGES:
            for word, frequency in wordfreq.get_frequency_dict(
                    language, wordlist=_WORDLIST).items():
                if frequency >= MIN_FREQUENCY:
                    copy.write_row((language, word, frequency))
    conn.execute("""
        INSERT INTO language_lexemes (lexeme, frequency)
        SELECT lexeme, least(max(frequency), 1)
        FROM (SELECT w.language, l.lexeme, sum(w.frequency) AS frequency
              FROM language_words w
              CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english', w.word)))
                   AS l(lexeme)
              GROUP BY w.language, l.lexeme) per_language
        GROUP BY lexeme""")
