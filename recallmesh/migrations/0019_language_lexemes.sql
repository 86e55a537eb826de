-- recallmesh schema v19: the words the languages themselves use, beside each namespace's own
-- (issue 66; docs/decisions/0021-words-of-the-language.md).
--
-- One row per lexeme (of the english text search configuration, as memories are indexed) of a
-- word that a supported language uses at least once in a million words, with the highest
-- frequency any of those languages gives it (the frequencies of the words that share a lexeme
-- summed). Loaded after the migrations by recallmesh/migrations/word_frequencies.py from the
-- wordfreq package; `language_lexemes_source` names what was loaded, so that a new list
-- replaces the old one once. The same rows in every namespace: not tenant data.
CREATE TABLE language_lexemes (
    lexeme text PRIMARY KEY,
    frequency float8 NOT NULL CHECK (frequency > 0 AND frequency <= 1)
);
CREATE TABLE language_lexemes_source (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    source text NOT NULL,
    words integer NOT NULL,
    loaded_at timestamptz NOT NULL DEFAULT now()
);
