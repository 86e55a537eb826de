"""Unit: request validation (no gRPC server, no database)."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.api import validation
from recallmesh.api.filters import Filters, filter_sql, filters_from_proto
from recallmesh.platform.errors import InvalidArgument
from recallmesh.v1 import memory_pb2


def test_new_memory_defaults_and_normalisation():
    memory = validation.new_memory(
        memory_pb2.Memory(content="  keep my spaces  ", category=" pref ",
                          tags=["a", " a ", "b"]), "ns")
    assert memory.content == "  keep my spaces  "
    assert memory.category == "pref"
    assert memory.tags == ("a", "b")  # trimmed and de-duplicated, order kept
    assert memory.importance == validation.DEFAULT_IMPORTANCE
    assert memory.created_at is None


def test_importance_zero_is_kept_not_defaulted():
    memory = validation.new_memory(memory_pb2.Memory(content="x", importance=0.0), "ns")
    assert memory.importance == 0


@pytest.mark.parametrize("importance", [-0.01, 1.01, float("inf"), float("nan")])
def test_importance_out_of_range(importance):
    with pytest.raises(InvalidArgument, match="importance"):
        validation.new_memory(memory_pb2.Memory(content="x", importance=importance), "ns")


def test_content_limit_counts_utf8_bytes():
    ok = "é" * (validation.MAX_CONTENT_BYTES // 2)
    validation.new_memory(memory_pb2.Memory(content=ok), "ns")
    with pytest.raises(InvalidArgument, match="bytes"):
        validation.new_memory(memory_pb2.Memory(content=ok + "é"), "ns")


def test_metadata_limits():
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata={"": "v"}), "ns")
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata={"k": "v" * 1025}), "ns")
    many = {f"k{i}": "v" for i in range(validation.MAX_METADATA_ENTRIES + 1)}
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata=many), "ns")


def test_namespace_rules():
    assert validation.namespace("  team-a  ") == "team-a"
    for bad in ["", "   ", "x" * 129, "tab\there"]:
        with pytest.raises(InvalidArgument, match="namespace"):
            validation.namespace(bad)


def test_memory_id_must_be_uuid():
    uid = "0FCA1B9E-0000-4000-8000-000000000000"
    assert validation.memory_id(uid) == uid.lower()
    with pytest.raises(InvalidArgument, match="UUID"):
        validation.memory_id("42")


def test_recall_query_defaults():
    q = validation.recall_query(memory_pb2.RecallRequest(namespace="n", query="hello"))
    assert (q.k, q.sort_by, q.budget_ms, q.filters) == (10, "relevance", None, Filters())


@pytest.mark.parametrize("k", [-1, 101, 1000])
def test_recall_k_bounds(k):
    with pytest.raises(InvalidArgument, match="k must"):
        validation.recall_query(memory_pb2.RecallRequest(namespace="n", query="q", k=k))


def test_sort_by_names():
    assert validation.sort_by(memory_pb2.SORT_BY_UNSPECIFIED) == "relevance"
    assert validation.sort_by(memory_pb2.SORT_BY_IMPORTANCE) == "importance"
    assert validation.sort_by(memory_pb2.SORT_BY_RECENCY) == "recency"
    with pytest.raises(InvalidArgument, match="sort_by"):
        validation.sort_by(42)


def test_filters_parse_and_render():
    msg = memory_pb2.RecallFilters(categories=["a", "a"], tags=["t"],
                                   created_after=Timestamp(seconds=0),
                                   created_before=Timestamp(seconds=86400))
    filters = filters_from_proto(msg)
    assert filters.categories == ("a",)
    sql, params = filter_sql(filters)
    assert "m.category = ANY(%(f_categories)s)" in sql
    assert "m.tags && %(f_tags)s::text[]" in sql
    assert "m.created_at >= %(f_after)s" in sql and "m.created_at < %(f_before)s" in sql
    assert params["f_categories"] == ["a"] and params["f_tags"] == ["t"]
    assert filter_sql(Filters()) == ("", {})


@given(st.text(max_size=200))
def test_query_text_validation_total(text):
    """Any text is either accepted unchanged or rejected with InvalidArgument."""
    try:
        assert validation.query_text(text) == text
    except InvalidArgument as exc:
        assert "query" in str(exc)
        assert "\x00" in text or not text.strip() or len(text.encode()) > 4096
