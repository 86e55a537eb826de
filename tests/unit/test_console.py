"""Unit: the console's plain cores: sessions and their CSRF tokens, the forms as the client's
options, the explain view, and the rules of the app that need no gateway (where sign-in may
send a browser, how requests are named in metrics, the security headers)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.client import Hit, LegContribution, LegReport, Memory, RecallResult
from recallmesh.console import forms, pictures
from recallmesh.console.app import CSP
from recallmesh.console.explain import BAR_WIDTH, explain_view
from recallmesh.console.paths import safe_next
from recallmesh.console.routes import route_name
from recallmesh.console.sessions import SessionStore, valid_csrf
from recallmesh.console.settings import ConsoleSettings
from recallmesh.shared.settings import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_ends_when_idle_and_in_all() -> None:
    clock = Clock()
    store = SessionStore(idle_s=60, absolute_s=300, clock=clock)
    session = store.create("rmk_secret")
    assert store.get(session.id) is session
    clock.now += 59
    assert store.get(session.id) is session  # each request restarts the idle clock
    clock.now += 59
    assert store.get(session.id) is session
    clock.now += 61
    assert store.get(session.id) is None  # idle too long
    session = store.create("rmk_secret")
    for _ in range(5):
        clock.now += 50
        assert store.get(session.id) is session
    clock.now += 51
    assert store.get(session.id) is None  # 300 s in all, however busy
    assert store.get(None) is None and store.get("") is None and store.get("nope") is None


def test_sessions_are_random_and_hold_the_key_out_of_sight() -> None:
    store = SessionStore(idle_s=60, absolute_s=300)
    a, b = store.create("rmk_secret"), store.create("rmk_secret")
    assert a.id != b.id and a.csrf != b.csrf and len(a.id) >= 40 and len(a.csrf) >= 40
    assert "rmk_secret" not in repr(a) and a.key_name not in ("", "rmk_secret")
    assert store.drop_key("rmk_secret") == 2 and len(store) == 0


def test_csrf_tokens_are_the_sessions_own() -> None:
    store = SessionStore(idle_s=60, absolute_s=300)
    a, b = store.create("k1"), store.create("k2")
    assert valid_csrf(a, a.csrf)
    assert not valid_csrf(a, b.csrf)
    assert not valid_csrf(a, None) and not valid_csrf(a, "") and not valid_csrf(a, a.csrf[:-1])


def test_filter_form_to_client_options() -> None:
    options = forms.list_options({
        "category": "fact, preference", "tag": "maya", "tag_none": "old", "thread": "",
        "meta": "team=web\nteam=api, source=chat", "importance_min": "0.4",
        "created_after": "2026-03-01", "as_of": "2026-03-02T09:00:00Z",
        "order_by": "importance", "ascending": "on", "include_ended": "on"})
    assert options["categories"] == ["fact", "preference"]
    assert options["tags"] == ["maya"] and options["tags_none"] == ["old"]
    assert "threads" not in options
    assert options["metadata"] == {"team": ["web", "api"], "source": ["chat"]}
    assert options["importance_min"] == 0.4
    assert options["created_after"] == datetime(2026, 3, 1, tzinfo=UTC)
    assert options["as_of"] == datetime(2026, 3, 2, 9, tzinfo=UTC)
    assert (options["order_by"], options["ascending"], options["include_ended"],
            options["include_deleted"]) == ("importance", True, True, False)
    assert forms.filter_options({}) == {}


@pytest.mark.parametrize(("form", "names"), [
    ({"importance_min": "2"}, "importance min"),
    ({"importance_max": "lots"}, "importance max"),
    ({"created_before": "yesterday"}, "created before"),
    ({"meta": "no-equals-sign"}, "metadata"),
    ({"order_by": "random"}, "order"),
])
def test_a_bad_form_value_names_its_field(form: dict[str, str], names: str) -> None:
    with pytest.raises(forms.FormError, match=names):
        forms.list_options(form)


def test_recall_and_context_settings() -> None:
    options = forms.recall_options({"k": "5", "sort_by": "recency", "min_score": "0.2",
                                    "budget_ms": "250", "fusion": "rrf", "tag": "a"})
    assert options == {"explain": True, "k": 5, "sort_by": "recency", "min_score": 0.2,
                       "budget_ms": 250, "fusion": {"method": "rrf"}, "tags": ["a"]}
    assert forms.recall_options({}) == {"explain": True, "sort_by": "relevance"}
    with pytest.raises(forms.FormError, match="k"):
        forms.recall_options({"k": "500"})
    assert forms.context_options({"max_tokens": "300", "min_score": "0.1"}) == {
        "max_tokens": 300, "min_score": 0.1}


def test_an_unchanged_form_changes_nothing() -> None:
    memory = Memory(id="m", namespace="n", content="text", category="fact", tags=("a", "b"),
                    importance=0.5)
    same = {"content": "text", "category": "fact", "tags": "a, b", "importance": "0.50"}
    assert forms.update_fields(same, memory) == {}
    changed = forms.update_fields({**same, "content": "new text", "sensitive": "on"}, memory)
    assert changed == {"content": "new text", "sensitive": True}
    # a withheld memory's form has no text or tags: they are left as they are
    assert forms.update_fields({"category": "fact", "importance": "0.5"}, memory) == {}
    with pytest.raises(forms.FormError, match="content"):
        forms.update_fields({**same, "content": "  "}, memory)


def _memory(mid: str) -> Memory:
    return Memory(id=mid, namespace="n", content=mid)


def test_explain_view_lays_out_every_leg() -> None:
    result = RecallResult(
        hits=(Hit(_memory("a"), 0.8, (LegContribution("lexical", 1, 7.2),
                                      LegContribution("vector", 2, 0.61))),
              Hit(_memory("b"), 0.05, (LegContribution("graph", 1, 0.01, "maya -> svelte"),))),
        legs=(LegReport("lexical", "OK", 12.0, 20), LegReport("vector", "OK", 30.0, 50),
              LegReport("graph", "TIMEOUT", 60.0, 0, "budget 60 ms")),
        degraded=True, fusion="calibrated (local: fusion service unavailable)",
        latency_ms=70.0)
    view = explain_view(result)
    assert view.legs == ("lexical", "vector", "graph")
    a, b = view.hits
    assert a.cells[0] is not None and a.cells[0].rank == 1 and a.cells[2] is None
    assert b.cells[2] is not None and b.cells[2].reason == "maya -> svelte"
    assert a.bar == round(BAR_WIDTH * 0.8) and 0 < b.bar < a.bar
    assert [leg.bar for leg in view.leg_rows] == [48, 120, 240]
    assert view.why_degraded == ("graph timeout: budget 60 ms",
                                 "fused in the gateway: fusion service unavailable")
    assert view.floor is None and view.floor_x is None


@given(st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), max_size=20))
def test_bars_stay_within_their_width_and_keep_the_order(scores: list[float]) -> None:
    result = RecallResult(hits=tuple(Hit(_memory(str(i)), s) for i, s in enumerate(scores)),
                          legs=(), degraded=False, fusion="rrf", latency_ms=1.0)
    bars = [row.bar for row in explain_view(result).hits]
    assert all(0 <= bar <= BAR_WIDTH for bar in bars)
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    assert [bars[i] for i in order] == sorted(bars)


@pytest.mark.parametrize(("raw", "where"), [
    ("/ns/demo", "/ns/demo"), (None, "/"), ("", "/"), ("https://evil.example/", "/"),
    ("//evil.example/x", "/"), ("/\\evil.example", "/"), ("javascript:alert(1)", "/")])
def test_sign_in_sends_a_browser_only_within_the_console(raw: str | None, where: str) -> None:
    assert safe_next(raw) == where


def test_requests_are_named_by_route_not_by_their_namespace_or_id() -> None:
    def name(path: str) -> str:
        return route_name(path)

    assert name("/ns/acme-alice") == "/ns/{namespace}"
    assert name("/ns/acme-alice/recall") == "/ns/{namespace}/recall"
    assert name("/ns/acme/m/0b4e7f9e-0000-4000-8000-000000000000") == "/ns/{namespace}/m/{id}"
    assert name("/ns/acme/m/0b4e7f9e/pin") == "/ns/{namespace}/m/{id}/pin"
    assert name("/static/htmx.min.js") == "/static"
    assert name("/wp-admin") == "other"


def test_every_route_of_the_table_is_counted_under_its_own_template() -> None:
    from starlette.routing import Mount, Route

    from recallmesh.console.routes import ROUTES

    for route in ROUTES:
        assert isinstance(route, Route | Mount)
        path = re.sub(r"\{[^}]+\}", "x", route.path) + ("/x.js" if isinstance(route, Mount)
                                                        else "")
        assert route_name(path) == route.path.replace("{memory_id}", "{id}"), path


def test_the_policy_allows_nothing_from_elsewhere_and_nothing_inline() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CSP.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["form-action"] == "'self'"
    assert "unsafe" not in CSP and "http" not in CSP


def test_settings_from_the_environment() -> None:
    settings = ConsoleSettings.from_env({"RECALLMESH_CONSOLE_PORT": "9000",
                                         "RECALLMESH_CONSOLE_SHOW_SENSITIVE": "true",
                                         "RECALLMESH_TARGET": "gw:50051"})
    assert (settings.port, settings.show_sensitive, settings.target, settings.host) == (
        9000, True, "gw:50051", "127.0.0.1")
    with pytest.raises(ConfigError):
        ConsoleSettings.from_env({"RECALLMESH_CONSOLE_PORT": "70000"})
    with pytest.raises(ConfigError):
        ConsoleSettings.from_env({"RECALLMESH_CONSOLE_SESSION_TTL_S": "0"})


def test_the_count_matches_what_the_list_includes() -> None:
    options = forms.list_options({"include_ended": "on", "include_deleted": "on",
                                  "order_by": "updated", "tag": "a"})
    assert forms.count_options(options) == {"include_ended": True, "include_deleted": True,
                                            "tags": ["a"]}


@pytest.mark.parametrize(("client", "host", "local"), [
    ("127.0.0.1", "localhost:8080", True), ("::1", "[::1]:8080", True),
    ("127.0.0.1", "127.0.0.1:8080", True), ("127.0.0.1", "localhost", True),
    ("127.0.0.1", "rebound.example:8080", False),  # DNS rebinding: another site's name
    ("10.0.0.7", "localhost:8080", False), ("127.0.0.1", "", False)])
def test_auto_sign_in_only_from_this_machine_to_a_local_name(client: str, host: str,
                                                            local: bool) -> None:
    from starlette.requests import Request

    from recallmesh.console.origin import loopback

    headers = [(b"host", host.encode())] if host else []
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": headers,
                       "client": (client, 50000)})
    assert loopback(request) is local


def test_the_edit_form_changes_thread_metadata_and_times_and_clears_a_time() -> None:
    when = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    memory = Memory(id="m", namespace="n", content="text", thread="t1",
                    metadata={"source": "chat"}, expires_at=when)
    same = {"content": "text", "thread": "t1", "metadata": "source=chat\n",
            "valid_from": "", "valid_to": "", "expires_at": when.isoformat()}
    assert forms.update_fields(same, memory) == {}
    changed = forms.update_fields({**same, "thread": "t2", "metadata": "source=mail, lang=de",
                                   "valid_from": "2026-01-01", "expires_at": ""}, memory)
    assert changed == {"thread": "t2", "metadata": {"source": "mail", "lang": "de"},
                       "valid_from": datetime(2026, 1, 1, tzinfo=UTC), "expires_at": None}
    # a withheld memory's form has no metadata: it is left as it is
    assert "metadata" not in forms.update_fields({"content": "text"}, memory)


@pytest.mark.parametrize(("raw", "says"), [
    ("source", "write key=value"), ("=x", "write key=value"),
    ("a=1\na=2", "given twice")])
def test_metadata_of_a_memory_is_key_value_pairs(raw: str, says: str) -> None:
    with pytest.raises(forms.FormError, match=says):
        forms.metadata_pairs(raw)


def test_the_add_form_gives_the_fields_it_has() -> None:
    content, fields = forms.new_memory({
        "content": "  Maya's desk is on floor 3 ", "category": "fact", "tags": "office, maya",
        "importance": "0.8", "thread": "", "metadata": "building=north", "valid_from": "",
        "expires_at": "2031-01-01", "sensitive": "on"})
    assert content == "Maya's desk is on floor 3"
    assert fields == {"category": "fact", "tags": ["office", "maya"], "importance": 0.8,
                      "metadata": {"building": "north"},
                      "expires_at": datetime(2031, 1, 1, tzinfo=UTC),
                      "sensitive": True, "pinned": False}
    with pytest.raises(forms.FormError, match="content"):
        forms.new_memory({"content": " "})
    with pytest.raises(forms.FormError, match="importance"):
        forms.new_memory({"content": "x", "importance": "2"})


def test_the_weeks_picture_counts_calendar_weeks_and_scales_to_the_busiest() -> None:
    now = datetime(2026, 3, 4, 15, 30, tzinfo=UTC)  # a Wednesday
    spans = pictures.weeks(now, 3)
    assert [w.start.date().isoformat() for w in spans] == ["2026-02-16", "2026-02-23",
                                                           "2026-03-02"]
    assert spans[-1].end == now and spans[0].end == spans[1].start
    assert pictures.bars(spans) == []  # nothing written: nothing drawn
    drawn = pictures.bars([pictures.Week(w.start, w.end, n)
                           for w, n in zip(spans, (2, 0, 4), strict=True)])
    room = pictures.HEIGHT - pictures.LABEL_H
    assert [b.height for b in drawn] == [room / 2, 0, room]
    assert drawn[0].title == "week of 2026-02-16: 2 memories"
    assert all(0 <= b.x and b.x + b.width <= pictures.WIDTH for b in drawn)
