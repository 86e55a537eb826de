"""Unit: every lexical statement selects its row type's fields, in their order and by their
names (recallmesh/services/lexical/rows.py), so that the leg reads each column by name into the
field it belongs to: every builder, every variant (sort mode, pruning, corrections, filters)."""

from __future__ import annotations

import itertools
import re

import pytest

from recallmesh.policy import SortBy
from recallmesh.services.lexical.bm25 import build_bm25_sql
from recallmesh.services.lexical.bm25_index import build_bm25_index_sql
from recallmesh.services.lexical.rows import HIT_COLUMNS, LexicalRow
from recallmesh.services.lexical.spelling import BM25_PREPARE, Prepared, spelling_params
from recallmesh.services.lexical.ts_rank import build_search_sql
from recallmesh.wire.filters import Filters

FILTERS = [Filters(), Filters(tags=("a",)), Filters(categories=("c",), metadata=(("k", ("v",)),))]


def top_level_split(text: str) -> list[str]:
    """`text` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def output_names(sql: str) -> tuple[str, ...]:
    """The column names of a statement's answer: its outermost SELECT list (the last SELECT at
    the start of a line, up to the FROM at the start of a line), each item's `AS` alias, or the
    column it reads (`id::text` is `id`, `c.work_mem` is `work_mem`)."""
    select = sql[sql.rindex("\nSELECT ") + len("\nSELECT "):]
    select = select[:select.index("\nFROM ")]
    names = []
    for item in top_level_split(select):
        item = " ".join(item.split())
        alias = re.search(r"\sAS\s+(\w+)$", item)
        if alias:
            names.append(alias.group(1))
        else:
            assert re.fullmatch(r"[\w.]+(::\w+)?", item), f"an unnamed column: {item!r}"
            names.append(item.split("::")[0].split(".")[-1])
    return tuple(names)


def test_the_parser_reads_aliases_and_plain_columns() -> None:
    sql = "WITH x AS (\nSELECT 1\n)\nSELECT id::text, f(a, b) AS s, t.tier\nFROM t"
    assert output_names(sql) == ("id", "s", "tier")


def test_the_row_types_hit_columns_lead_and_the_index_counts_follow() -> None:
    assert HIT_COLUMNS == ("id", "score", "rank", "tier", "importance", "scale", "is_sensitive")
    assert LexicalRow._fields == (*HIT_COLUMNS, "candidates", "table_rows")


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize("sort_by", ["relevance", "importance", "recency"])
def test_the_ts_rank_statement_selects_the_hit_columns(filters: Filters, sort_by: SortBy) -> None:
    assert output_names(build_search_sql(filters, sort_by)[0]) == HIT_COLUMNS


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize(("sort_by", "prune", "corrected"), list(itertools.product(
    ["relevance", "importance", "recency"], [True, False], [True, False])))
def test_the_bm25_statement_selects_the_hit_columns(filters: Filters, sort_by: SortBy,
                                                    prune: bool, corrected: bool) -> None:
    sql, _ = build_bm25_sql(filters, sort_by, prune=prune, corrected=corrected)
    assert output_names(sql) == HIT_COLUMNS


@pytest.mark.parametrize("filters", FILTERS)
@pytest.mark.parametrize(("sort_by", "corrected"), list(itertools.product(
    ["relevance", "importance"], [True, False])))
def test_the_index_statement_selects_every_field(filters: Filters, sort_by: SortBy,
                                                 corrected: bool) -> None:
    sql, _ = build_bm25_index_sql(filters, sort_by, corrected=corrected)
    assert output_names(sql) == LexicalRow._fields


def test_the_first_round_trip_selects_its_row_types_fields() -> None:
    assert output_names(BM25_PREPARE) == Prepared._fields


def test_spelling_params_reads_a_row_by_its_fields() -> None:
    assert spelling_params(None) == {}
    assert spelling_params(("32MB", 4, None, None, None)) == {}
    assert spelling_params(Prepared("32MB", 4, ["violnist"], ["violinist"], [0.6])) == {
        "spelled_terms": ["violnist"], "spelled_lexemes": ["violinist"],
        "spelled_similarity": [0.6]}
