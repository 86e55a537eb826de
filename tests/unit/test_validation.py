"""Unit: request validation (no gRPC server, no database)."""

from __future__ import annotations

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2, retriever_pb2
from recallmesh.wire import enums, retriever, validation
from recallmesh.wire.filters import Filters, filter_sql, filters_from_proto
from recallmesh.wire.memory_fields import DEFAULT_IMPORTANCE


def test_new_memory_defaults_and_normalisation() -> None:
    memory = validation.new_memory(
        memory_pb2.Memory(content="  keep my spaces  ", category=" pref ",
                          tags=["a", " a ", "b"]), "ns")
    assert memory.content == "  keep my spaces  "
    assert memory.category == "pref"
    assert memory.tags == ("a", "b")  # trimmed and de-duplicated, order kept
    assert memory.importance == DEFAULT_IMPORTANCE
    assert memory.created_at is None


def test_importance_zero_is_kept_not_defaulted() -> None:
    memory = validation.new_memory(memory_pb2.Memory(content="x", importance=0.0), "ns")
    assert memory.importance == 0


@pytest.mark.parametrize("importance", [-0.01, 1.01, float("inf"), float("nan")])
def test_importance_out_of_range(importance: float) -> None:
    with pytest.raises(InvalidArgument, match="importance"):
        validation.new_memory(memory_pb2.Memory(content="x", importance=importance), "ns")


def test_content_limit_counts_utf8_bytes() -> None:
    ok = "é" * (validation.MAX_CONTENT_BYTES // 2)
    validation.new_memory(memory_pb2.Memory(content=ok), "ns")
    with pytest.raises(InvalidArgument, match="bytes"):
        validation.new_memory(memory_pb2.Memory(content=ok + "é"), "ns")


def test_metadata_limits() -> None:
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata={"": "v"}), "ns")
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata={"k": "v" * 1025}), "ns")
    many = {f"k{i}": "v" for i in range(validation.MAX_METADATA_ENTRIES + 1)}
    with pytest.raises(InvalidArgument, match="metadata"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata=many), "ns")


def test_namespace_rules() -> None:
    assert validation.namespace("  team-a  ") == "team-a"
    for bad in ["", "   ", "x" * 129, "tab\there"]:
        with pytest.raises(InvalidArgument, match="namespace"):
            validation.namespace(bad)


# Zero-width, bidi-control and other invisible characters named in issue 24, and a few more.
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c",
             "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\ufeff", "\u00ad",
             "\u2060", "\u034f", "\u3164", "\ufe0f", "\U000e0041", "\U000e0100"]
CONTROL = ["\x00", "\x01", "\t", "\n", "\x1b", "\x7f", "\x85", "\x9f"]
OTHER_BAD = ["\u00a0", "\u2028", "\u2029", "\u3000", "\ue000", "\U0010fffd", "\ud800",
             "\uffff"]


@pytest.mark.parametrize("char", INVISIBLE + CONTROL + OTHER_BAD)
def test_namespace_rejects_invisible_control_and_separator_characters(char: str) -> None:
    raw = f"tenant{char}-a" + "x" * 40
    with pytest.raises(InvalidArgument) as info:
        validation.namespace(raw)
    message = info.value.message
    assert message.startswith("namespace must not contain ")
    assert f"U+{ord(char):04X}" in message and "at character 7" in message
    assert "tenant" not in message and message.isascii()  # never the raw input


def test_namespace_is_nfc_normalised_everywhere_it_enters() -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert validation.namespace(decomposed) == composed
    assert validation.namespace(" \u212b ") == "\u00c5"  # ANGSTROM SIGN -> A WITH RING
    assert validation.namespace("team a") == "team a"  # an inner U+0020 is printable
    # memory.namespace is compared after the same normalisation
    validation.new_memory(memory_pb2.Memory(content="x", namespace=decomposed), composed)
    with pytest.raises(InvalidArgument, match=r"memory.namespace must not contain U\+200B"):
        validation.new_memory(memory_pb2.Memory(content="x", namespace="a\u200b"), "a")
    q = validation.recall_query(memory_pb2.RecallRequest(namespace=decomposed, query="q"))
    assert q.namespace == composed
    leg_query = retriever.leg_query_from_proto(
        retriever_pb2.SearchRequest(namespace=decomposed, query="q", k=5))
    assert leg_query.namespace == composed
    with pytest.raises(InvalidArgument, match=r"U\+202E"):
        retriever.leg_query_from_proto(
            retriever_pb2.SearchRequest(namespace="a\u202eb", query="q", k=5))


_NAMESPACE_CHARS = st.one_of(
    st.characters(),  # surrogates, unassigned and private-use code points included
    st.sampled_from(INVISIBLE + CONTROL + OTHER_BAD + ["e\u0301", "\u212b", " ", "a", "\u00e9"]),
)


@given(st.one_of(st.text(), st.lists(_NAMESPACE_CHARS, max_size=140).map("".join)))
def test_namespace_property_accepted_are_nfc_printable_rejected_are_invalid_argument(
        raw: str) -> None:
    import unicodedata
    try:
        ns = validation.namespace(raw)
    except InvalidArgument as exc:
        assert exc.message.startswith("namespace ") and exc.message.isascii()
        return
    assert ns == unicodedata.normalize("NFC", ns) == ns.strip()
    assert 1 <= len(ns) <= validation.MAX_NAMESPACE_CHARS
    for char in ns:
        assert char == " " or (char.isprintable() and char not in INVISIBLE), ascii(char)
        assert unicodedata.category(char)[0] != "C"
    assert validation.namespace(ns) == ns  # idempotent


def test_memory_id_must_be_uuid() -> None:
    uid = "0FCA1B9E-0000-4000-8000-000000000000"
    assert validation.memory_id(uid) == uid.lower()
    with pytest.raises(InvalidArgument, match="UUID"):
        validation.memory_id("42")


def test_recall_query_defaults() -> None:
    q = validation.recall_query(memory_pb2.RecallRequest(namespace="n", query="hello"))
    assert (q.k, q.sort_by, q.budget_ms, q.filters) == (10, "relevance", None, Filters())


@pytest.mark.parametrize("k", [-1, 101, 1000])
def test_recall_k_bounds(k: int) -> None:
    with pytest.raises(InvalidArgument, match="k must"):
        validation.recall_query(memory_pb2.RecallRequest(namespace="n", query="q", k=k))


def test_sort_by_names() -> None:
    assert enums.sort_by(memory_pb2.SORT_BY_UNSPECIFIED) == "relevance"
    assert enums.sort_by(memory_pb2.SORT_BY_IMPORTANCE) == "importance"
    assert enums.sort_by(memory_pb2.SORT_BY_RECENCY) == "recency"
    with pytest.raises(InvalidArgument, match="sort_by"):
        enums.sort_by(42)  # type: ignore[arg-type]  # a value outside the enum, on purpose


def test_filters_parse_and_render() -> None:
    msg = memory_pb2.RecallFilters(categories=["a", "a"], tags=["t"],
                                   created_after=Timestamp(seconds=0),
                                   created_before=Timestamp(seconds=86400))
    filters = filters_from_proto(msg)
    assert filters.categories == ("a",)
    sql, params = filter_sql(filters)
    assert "m.category = ANY(%(f_categories)s)" in sql
    assert "m.tags && %(f_tags)s::text[]" in sql
    assert "m.created_at >= %(f_created_after)s" in sql
    assert "m.created_at < %(f_created_before)s" in sql
    assert params["f_categories"] == ["a"] and params["f_tags"] == ["t"]
    assert filter_sql(Filters()) == ("", {})


@given(st.text(max_size=200))
def test_query_text_validation_total(text: str) -> None:
    """Any text is either accepted unchanged or rejected with InvalidArgument."""
    try:
        assert validation.query_text(text) == text
    except InvalidArgument as exc:
        assert "query" in str(exc)
        assert "\x00" in text or not text.strip() or len(text.encode()) > 4096


def test_memory_id_on_store_is_the_idempotency_key() -> None:
    uid = "0FCA1B9E-0000-4000-8000-000000000000"
    assert validation.new_memory(memory_pb2.Memory(content="x", id=f" {uid} "), "ns").id == \
        uid.lower()
    assert validation.new_memory(memory_pb2.Memory(content="x"), "ns").id is None
    with pytest.raises(InvalidArgument, match=r"^memories\[0\]\.id must be a UUID \(or empty\)$"):
        validation.new_memories([memory_pb2.Memory(content="x", id="42")], "ns")
    with pytest.raises(InvalidArgument, match=r"^memories\[2\]\.id repeats memories\[0\]\.id$"):
        validation.new_memories([memory_pb2.Memory(content="x", id=uid),
                                 memory_pb2.Memory(content="y"),
                                 memory_pb2.Memory(content="z", id=uid.lower())], "ns")


def test_importance_is_checked_as_the_single_it_is_stored_as() -> None:
    for tiny in (1e-50, 7e-46, 5e-324):
        assert validation.new_memory(memory_pb2.Memory(content="x", importance=tiny),
                                     "ns").importance == 0.0
    assert validation.new_memory(memory_pb2.Memory(content="x", importance=1.00000001),
                                 "ns").importance == 1.0


@pytest.mark.parametrize("key", [" ", "\t\n", ""])
def test_a_blank_metadata_key_is_refused_with_its_reason(key: str) -> None:
    with pytest.raises(InvalidArgument, match="must not be empty or only white space"):
        validation.new_memory(memory_pb2.Memory(content="x", metadata={key: "v"}), "ns")


def _import(*records: memory_pb2.MemoryRecord) -> memory_pb2.ImportRequest:
    return memory_pb2.ImportRequest(namespace="ns", records=records)


def _record(versions: int, first: int = 1, memory_id: str = "") -> memory_pb2.MemoryRecord:
    rec = memory_pb2.MemoryRecord(memory=memory_pb2.Memory(
        id=memory_id or "00000000-0000-0000-0000-00000000000a", content="now",
        created_at=Timestamp(seconds=1000), updated_at=Timestamp(seconds=2000)))
    for j in range(versions):
        v = rec.versions.add(version=first + j, replaced_by="x")
        v.memory.content = f"v{first + j}"
        v.memory.updated_at.seconds = 1000 + j
        v.replaced_at.seconds = 1001 + j
    return rec


def test_imported_versions_are_bounded_and_consecutive_from_any_start() -> None:
    assert len(validation.imported_records(_import(_record(3, first=7)))[1][0].versions) == 3
    with pytest.raises(InvalidArgument, match=r"records\[0\].versions: at most 100"):
        validation.imported_records(_import(_record(validation.MAX_VERSIONS + 1)))
    many = [_record(validation.MAX_VERSIONS, memory_id=f"00000000-0000-0000-0000-{i:012d}")
            for i in range(validation.MAX_IMPORT_VERSIONS // validation.MAX_VERSIONS + 1)]
    with pytest.raises(InvalidArgument, match="at most 2000 versions in all"):
        validation.imported_records(_import(*many))
    gap = _record(2)
    gap.versions[1].version = 3
    with pytest.raises(InvalidArgument, match=r"versions\[1\].version must be 2"):
        validation.imported_records(_import(gap))
    for start in (0, validation.MAX_VERSION_NUMBER + 1):
        with pytest.raises(InvalidArgument, match=r"versions\[0\].version"):
            validation.imported_records(_import(_record(1, first=start)))


def test_an_imported_relation_names_its_source_as_a_uuid() -> None:
    rec = _record(0)
    rec.relations.add(type=memory_pb2.RELATION_TYPE_SUPERSEDES,
                      source_id="00000000-0000-0000-0000-00000000000A",
                      target_id="00000000-0000-0000-0000-00000000000B")
    assert validation.imported_records(_import(rec))[1][0].relations[0][:2] == (
        "supersedes", "00000000-0000-0000-0000-00000000000b")
    rec.relations[0].source_id = "00000000-0000-0000-0000-00000000000c"
    with pytest.raises(InvalidArgument, match="source_id must be the record's memory id"):
        validation.imported_records(_import(rec))
