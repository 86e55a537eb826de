-- recallmesh schema v4: corpus statistics for the lexical leg's BM25 ranking.
--
-- ts_rank knows nothing about how rare a word is in the namespace. BM25 needs,
-- per namespace, each lexeme's document frequency and the average document
-- length; both are kept current on write by the triggers below (live = not
-- soft-deleted), so a search reads them instead of scanning the namespace.
-- A document's length is the number of tokens in its search_vector (every
-- lexeme's position count), i.e. what BM25's term frequencies are counted in.

CREATE TABLE lexeme_stats (
    namespace text    NOT NULL,
    lexeme    text    NOT NULL,
    df        integer NOT NULL CHECK (df >= 0),  -- live memories containing the lexeme
    PRIMARY KEY (namespace, lexeme)
);

CREATE TABLE namespace_stats (
    namespace text    PRIMARY KEY,
    docs      integer NOT NULL CHECK (docs >= 0),  -- live memories
    total_len bigint  NOT NULL CHECK (total_len >= 0)  -- their summed lengths
);

CREATE FUNCTION recallmesh_tsvector_length(v tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce((SELECT sum(coalesce(array_length(u.positions, 1), 1))
                     FROM unnest(v) u), 0);

-- Count one memory's search vector in (sign 1) or out (sign -1) of its namespace.
CREATE FUNCTION recallmesh_count_lexemes(ns text, v tsvector, sign integer) RETURNS void
    LANGUAGE sql AS $$
    INSERT INTO lexeme_stats (namespace, lexeme, df)
    SELECT ns, lexeme, greatest(sign, 0) FROM unnest(tsvector_to_array(v)) AS lexeme
    ORDER BY lexeme  -- one lock order for every writer
    ON CONFLICT (namespace, lexeme) DO UPDATE SET df = greatest(lexeme_stats.df + sign, 0);
    INSERT INTO namespace_stats (namespace, docs, total_len)
    VALUES (ns, greatest(sign, 0), greatest(sign, 0) * recallmesh_tsvector_length(v))
    ON CONFLICT (namespace) DO UPDATE SET
        docs = greatest(namespace_stats.docs + sign, 0),
        total_len = greatest(namespace_stats.total_len + sign * recallmesh_tsvector_length(v), 0);
$$;

CREATE FUNCTION recallmesh_lexeme_stats() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        PERFORM recallmesh_count_lexemes(OLD.namespace, OLD.search_vector, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        PERFORM recallmesh_count_lexemes(NEW.namespace, NEW.search_vector, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_lexeme_stats
    AFTER INSERT OR DELETE OR UPDATE OF content, keywords, tags, category, deleted_at, namespace
    ON memories
    FOR EACH ROW EXECUTE FUNCTION recallmesh_lexeme_stats();

-- Memories stored before this migration.
INSERT INTO lexeme_stats (namespace, lexeme, df)
SELECT namespace, lexeme, count(*) FROM memories, unnest(tsvector_to_array(search_vector)) lexeme
WHERE deleted_at IS NULL GROUP BY namespace, lexeme;
INSERT INTO namespace_stats (namespace, docs, total_len)
SELECT namespace, count(*), sum(recallmesh_tsvector_length(search_vector)) FROM memories
WHERE deleted_at IS NULL GROUP BY namespace;
