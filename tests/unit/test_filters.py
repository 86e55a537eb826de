"""The filter grammar (recallmesh/wire/filters.py) and List's page tokens
(recallmesh/gateway/listing.py): round trips, SQL that binds every parameter it names, refusals
that name the field."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.gateway.listing import PageTokens, _digest, where
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.filters import Filters, filter_sql, filters_from_proto, filters_to_proto
from recallmesh.wire.memory_fields import StoredMemory
from recallmesh.wire.real import as_real
from recallmesh.wire.validation import ListQuery

label = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                min_size=1, max_size=20)
labels = st.lists(label, max_size=4, unique=True).map(tuple)
times = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                     timezones=st.just(UTC)).map(lambda t: t.replace(microsecond=0))
metadata_values = st.lists(st.text(st.characters(exclude_characters="\x00",
                                                 exclude_categories=["Cs"]),
                                   max_size=10), min_size=1, max_size=3, unique=True).map(tuple)


@st.composite
def filters(draw: st.DrawFn) -> Filters:
    low = draw(st.none() | st.floats(0, 0.5).map(as_real))  # importance is single precision
    created = draw(st.none() | times)
    tags = draw(labels)
    return Filters(
        categories=draw(labels), tags=tags, tags_all=draw(labels),
        tags_none=tuple(t for t in draw(labels) if t not in tags),
        threads=draw(labels),
        metadata=tuple((k, draw(metadata_values))
                       for k in draw(st.lists(label, max_size=3, unique=True))),
        importance_min=low,
        importance_max=None if low is None else as_real(draw(st.floats(low, 1))),
        created_after=created,
        created_before=None if created is None else created + timedelta(days=1),
        as_of=draw(st.none() | times))


@given(filters())
def test_filters_round_trip_through_the_proto(f: Filters) -> None:
    f = Filters(**{**f.__dict__, "tags_none": tuple(t for t in f.tags_none
                                                    if t not in f.tags_all)})
    msg = memory_pb2.RecallFilters()
    filters_to_proto(f, msg)
    assert filters_from_proto(msg) == f


@given(filters())
def test_filter_sql_binds_every_parameter_it_names(f: Filters) -> None:
    sql, params = filter_sql(f, alias="m")
    assert set(re.findall(r"%\((\w+)\)s", sql)) == set(params)
    assert (sql == "") == f.empty


def test_metadata_is_containment_one_value_equality_several_membership() -> None:
    sql, params = filter_sql(Filters(metadata=(("user", ("u1",)), ("src", ("a", "b")))))
    assert "m.metadata @> %(f_meta)s::jsonb" in sql and params["f_meta"] == '{"user": "u1"}'
    assert "(m.metadata @> %(f_meta_0_0)s::jsonb OR m.metadata @> %(f_meta_0_1)s::jsonb)" in sql


def test_importance_compares_at_the_columns_precision() -> None:
    sql, _ = filter_sql(Filters(importance_min=0.7))
    assert "m.importance >= %(f_importance_min)s::real" in sql


@pytest.mark.parametrize(("given_value", "compared"), [
    (1e-50, 0.0), (7e-46, 0.0), (5e-324, 0.0), (0.1, 0.10000000149011612), (1.00000001, 1.0)])
def test_importance_bounds_are_rounded_to_single_precision_first(given_value: float,
                                                                 compared: float) -> None:
    """What Postgres would round (and refuse as underflow) reaches it as the single it means."""
    f = filters_from_proto(memory_pb2.RecallFilters(importance_min=given_value,
                                                    importance_max=given_value))
    assert f.importance_min == f.importance_max == compared


@pytest.mark.parametrize("key", [" ", "\t", "", "k" * 129, "a\x00"])
def test_a_metadata_key_filter_follows_the_stored_keys_rule(key: str) -> None:
    msg = memory_pb2.RecallFilters()
    msg.metadata.add(key=key, values=["v"])
    with pytest.raises(InvalidArgument, match=r"filters.metadata\[0\].key (must not be empty or "
                                              r"only white space|must be at most 128|must not "
                                              r"contain NUL)"):
        filters_from_proto(msg)


def importance_min_above_max(m: memory_pb2.RecallFilters) -> None:
    m.importance_min, m.importance_max = 0.6, 0.5


@pytest.mark.parametrize(("build", "message"), [
    (lambda m: setattr(m, "importance_min", 1.5), "filters.importance_min must be within"),
    (importance_min_above_max, "must not be above"),
    (lambda m: (m.tags.append("a"), m.tags_none.append("a")), "tags_none also names"),
    (lambda m: m.metadata.add(key="k"), "filters.metadata[0].values"),
    (lambda m: (m.metadata.add(key="k", values=["a"]), m.metadata.add(key="k", values=["b"])),
     "named twice"),
    (lambda m: m.threads.append(" "), "filters.threads[0] is empty"),
    (lambda m: (m.updated_after.FromDatetime(datetime(2026, 2, 1)),
                m.updated_before.FromDatetime(datetime(2026, 1, 1))),
     "filters.updated_after must be earlier"),
])
def test_bad_filters_are_refused_naming_the_field(
        build: Callable[[memory_pb2.RecallFilters], object], message: str) -> None:
    msg = memory_pb2.RecallFilters()
    build(msg)
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        filters_from_proto(msg)


def _memory(created: datetime) -> StoredMemory:
    return StoredMemory("00000000-0000-0000-0000-000000000001", "ns", "x", "", (), 0.25, False,
                        created, created, None, None, {})


PAGES = PageTokens(b"k" * 32)


def test_a_page_token_continues_only_its_own_query() -> None:
    query = ListQuery("ns", Filters(tags=("a",)))
    token = PAGES.make(query, _memory(datetime(2026, 1, 1, tzinfo=UTC)))
    assert PAGES.after(ListQuery("ns", Filters(tags=("a",)), page_token=token, page_size=7)) == (
        datetime(2026, 1, 1, tzinfo=UTC), "00000000-0000-0000-0000-000000000001")
    for other in (ListQuery("ns", page_token=token), ListQuery("other", Filters(tags=("a",)),
                                                               page_token=token),
                  ListQuery("ns", Filters(tags=("a",)), ascending=True, page_token=token)):
        with pytest.raises(InvalidArgument, match="another query"):
            PAGES.after(other)
    with pytest.raises(InvalidArgument, match="not one this server made"):
        PAGES.after(ListQuery("ns", page_token="bm9wZQ"))
    # a well-formed payload without the deployment's signature: unsigned, signed with another
    # key, or a signed token's payload changed
    forged = base64.urlsafe_b64encode(json.dumps(
        ["2026-01-01T00:00:00+00:00", "1; DROP TABLE memories", _digest(query)]).encode()).decode()
    elsewhere = PageTokens(b"o" * 32).make(query, _memory(datetime(2026, 1, 1, tzinfo=UTC)))
    body, mac = token.split(".")
    altered = base64.urlsafe_b64encode(json.dumps(
        ["2027-01-01T00:00:00+00:00", "00000000-0000-0000-0000-000000000001",
         _digest(query)]).encode()).decode().rstrip("=") + "." + mac
    for bad in (forged, forged + "." + mac, elsewhere, altered, body, token + "A", "." + mac):
        with pytest.raises(InvalidArgument, match="not one this server made"):
            PAGES.after(replace(query, page_token=bad))


@given(st.text(max_size=200))
def test_any_page_token_text_is_a_page_or_invalid_argument(raw: str) -> None:
    try:
        PAGES.after(ListQuery("ns", page_token=raw))
    except InvalidArgument:
        pass


def test_importance_tokens_and_what_a_listing_sees() -> None:
    query = ListQuery("ns", order_by="importance")
    token = PAGES.make(query, _memory(datetime(2026, 1, 1, tzinfo=UTC)))
    after = PAGES.after(ListQuery("ns", order_by="importance", page_token=token))
    assert after is not None and after[0] == 0.25
    clause, _ = where(ListQuery("ns"))
    assert "m.deleted_at IS NULL" in clause and "m.valid_to > now()" in clause
    clause, _ = where(ListQuery("ns", include_deleted=True, include_ended=True))
    assert "deleted_at" not in clause and "valid_to" not in clause
    clause, _ = where(ListQuery("ns", Filters(as_of=datetime(2026, 1, 1, tzinfo=UTC))))
    assert "now()) " not in clause.split("expires_at > now())", 1)[1]  # validity read at T
