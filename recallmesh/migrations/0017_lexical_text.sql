-- recallmesh schema v17: the text a BM25 index of the lexical leg reads (issue 58;
-- docs/decisions/0018-bm25-index.md).
--
-- The memory's searchable fields in one text, in the order and with the tokens of its search
-- vector (0001: content, keywords with the CJK pairs, tags, category): to_tsvector('english')
-- of it holds the search vector's lexemes with their counts. pg_textsearch 1.0 indexes a column
-- (not an expression), so the text is a stored generated column; the index itself is made after
-- the migrations when the server has the extension (recallmesh/migrations/bm25_index.py).
CREATE FUNCTION recallmesh_lexical_text(content text, keywords text, tags text[], category text)
    RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN content || ' ' || keywords || ' ' || recallmesh_tags_text(tags) || ' ' || category;

ALTER TABLE memories ADD COLUMN lexical_text text
    GENERATED ALWAYS AS (recallmesh_lexical_text(content, keywords, tags, category)) STORED;
