"""The web console (docs/console.md) in a real browser: Debian's headless Chromium
(/usr/bin/chromium, `make browser-tools`) driven by Playwright, which uses that browser and
downloads none, against the console `recallmesh up` starts (Stack.start_console) on the
session's real stack, and a second console started as `recallmesh console` alone.

The walk an operator takes: signed in without typing the key (the local admin key, from
loopback), browse and filter a namespace, open a memory, recall with explain and the Context
preview, update a memory and find the version in its history, pin it and find it first in
the Context preview, export and import, delete-matching's dry run and confirmation, delete.
And what must be refused: a read-only key's action, a form without the session's CSRF token,
a wrong key at sign-in. The key never shows in a page, a URL or the console's log.

RECALLMESH_CONSOLE_SCREENSHOTS=DIR saves a screenshot of each page there (docs/console.md's
come from `make console-screenshots`)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recallmesh.stack.supervisor import Stack
from tests.helpers import api_key

playwright_sync = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SHOTS = os.environ.get("RECALLMESH_CONSOLE_SCREENSHOTS", "")

SVELTE = "Maya prefers Svelte over React for every new frontend"
MANAGER = "Maya's manager is Priya Natarajan, who joined in March"
DEPLOY = "The team deploys the billing service on Fridays after the review"
ADDRESS = "Maya's home address is 12 Rua Augusta, Lisbon"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, process: subprocess.Popen[bytes] | None = None,
              timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the console exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer within {timeout_s} s")


@pytest.fixture(scope="module")
def console_ns(stack: Stack) -> dict[str, Any]:
    """A namespace of four memories (one sensitive), searchable by meaning."""
    ns = f"console-{uuid.uuid4().hex[:8]}"
    ids: dict[str, str] = {}
    with stack.client(namespace=ns) as client:
        for name, content, fields in (
                ("svelte", SVELTE, {"category": "preference", "tags": ["frontend", "maya"],
                                    "importance": 0.7}),
                ("manager", MANAGER, {"category": "fact", "tags": ["people", "maya"]}),
                ("deploy", DEPLOY, {"category": "decision", "tags": ["billing"]}),
                ("address", ADDRESS, {"category": "fact", "sensitive": True})):
            ids[name] = client.store(content, wait_indexed=True, **fields).memory.id
    return {"ns": ns, "ids": ids}


@pytest.fixture(scope="module")
def up_console_metrics(stack: Stack) -> Iterator[tuple[str, int]]:
    """The console as `recallmesh up` starts it: loopback, the local admin key's file; its
    URL and metrics port."""
    metrics_port = free_port()
    url = stack.start_console(free_port(), metrics_port=metrics_port)
    yield url, metrics_port
    stack.stop_console()


@pytest.fixture(scope="module")
def up_console(up_console_metrics: tuple[str, int]) -> str:
    return up_console_metrics[0]


@pytest.fixture(scope="module")
def plain_console(stack: Stack, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[str, Path, int]]:
    """`recallmesh console` on its own: no key file, so everyone signs in by typing a key."""
    port, metrics_port = free_port(), free_port()
    log_path = tmp_path_factory.mktemp("console") / "console.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
    env.update(RECALLMESH_TARGET=stack.endpoints["gateway"], RECALLMESH_LOG_FORMAT="text",
               RECALLMESH_DATA_DIR=str(log_path.parent))
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "recallmesh.cli", "console", "--port", str(port),
             "--metrics-port", str(metrics_port)], env=env, stdout=log_file,
            stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", process)
        yield f"http://127.0.0.1:{port}", log_path, metrics_port
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make browser-tools` installs Debian's " \
                              "chromium"
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1180, "height": 760},
                                  accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()
    # nothing the page loads breaks the Content-Security-Policy or fails to load
    assert not [e for e in errors if "Content Security Policy" in e or "Refused" in e], errors


def shot(page: Any, name: str) -> None:
    """The whole page as a small PNG (a 64-colour palette, when Pillow is installed: the
    lab's dependencies bring it)."""
    if not SHOTS:
        return
    path = Path(SHOTS) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=64)
    small.save(path, optimize=True)


def test_the_operators_walk(page: Any, up_console: str, console_ns: dict[str, Any],
                            stack: Stack, tmp_path: Path) -> None:
    ns, ids = console_ns["ns"], console_ns["ids"]

    # signed in without typing the key: the local admin key, from loopback
    response = page.goto(f"{up_console}/")
    assert response.status == 200
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    namespaces = page.get_by_test_id("namespaces")
    row = namespaces.locator("tr", has_text=ns)
    assert row.count() == 1
    assert row.locator("td").nth(1).inner_text() == "4"  # live memories
    assert row.locator("td").nth(3).inner_text() == "1"  # sensitive
    shot(page, "namespaces")

    # browse, then filter (htmx swaps the rows and pushes the URL)
    row.get_by_role("link").click()
    page.wait_for_url(re.compile(rf"/ns/{ns}$"))
    assert page.get_by_test_id("count").inner_text().startswith("4 memories")
    assert ADDRESS not in page.content()  # sensitive text withheld by default
    assert "withheld" in page.get_by_test_id("memories").inner_text()
    page.locator("input[name=category]").first.fill("fact")
    page.get_by_test_id("filter-form").get_by_role("button", name="apply").click()
    page.wait_for_url(re.compile(r"category=fact"))
    page.get_by_test_id("count").filter(has_text="2 memories").wait_for()
    rows = page.get_by_test_id("memories").inner_text()
    assert MANAGER in rows and SVELTE not in rows
    shot(page, "memories")

    # open a memory: its fields
    page.get_by_test_id("memory-link").filter(has_text="Priya").click()
    page.wait_for_url(re.compile(rf"/m/{ids['manager']}$"))
    assert page.get_by_test_id("content").inner_text() == MANAGER
    assert "people, maya" in page.get_by_test_id("fields").inner_text()

    # update it: the version shows in its history with what changed
    form = page.get_by_test_id("update-form")
    form.locator("textarea[name=content]").fill(MANAGER + "; she runs the platform group")
    form.get_by_role("button", name="save").click()
    page.wait_for_url(re.compile(rf"/m/{ids['manager']}$"))
    assert page.get_by_test_id("content").inner_text().endswith("runs the platform group")
    versions = page.get_by_test_id("versions").inner_text()
    assert "content" in versions and "Priya Natarajan, who joined in March" in versions

    # pin it: pinned here, and first in the Context preview of a recall it does not answer
    page.get_by_test_id("pin-button").click()
    page.wait_for_url(re.compile(rf"/m/{ids['manager']}$"))
    assert page.get_by_test_id("pinned").is_visible()
    shot(page, "memory")

    # recall with explain: hits with their fused score and each leg's rank, the legs' states
    page.goto(f"{up_console}/ns/{ns}/recall")
    page.locator("input[name=q]").fill("which frontend framework does Maya like?")
    page.get_by_test_id("recall-form").get_by_role("button", name="recall").click()
    page.get_by_test_id("recall-result").wait_for()
    hits = page.get_by_test_id("hits")
    assert SVELTE in hits.locator("tbody tr").first.inner_text()
    assert hits.locator("svg rect.score").count() >= 1
    header = hits.locator("thead").inner_text()
    assert "lexical" in header and "vector" in header
    legs = page.get_by_test_id("legs").inner_text()
    assert "OK" in legs and "ms" in legs
    assert re.search(r"relevance floor 0\.\d{3}", page.locator(".summary").first.inner_text())
    items = page.get_by_test_id("context-items").locator("li")
    assert ids["manager"] in items.first.inner_text() and "pinned" in items.first.inner_text()
    assert re.match(r"\d+ tokens", page.get_by_test_id("context-summary").inner_text())
    assert SVELTE in page.get_by_test_id("context-text").inner_text()
    shot(page, "recall")
    # a bad setting: its message in place of the result, the form kept
    page.locator("input[name=k]").fill("500")
    page.get_by_test_id("recall-form").get_by_role("button", name="recall").click()
    assert "k: must be within 1..100" in page.get_by_test_id("error").inner_text()
    assert page.get_by_test_id("recall-form").is_visible()

    # a sensitive memory's page withholds its text, and its form cannot overwrite it
    page.goto(f"{up_console}/ns/{ns}/m/{ids['address']}")
    assert "withheld" in page.get_by_test_id("content").inner_text()
    assert ADDRESS not in page.content()
    assert page.get_by_test_id("update-form").locator("textarea").count() == 0

    # export, then import the export back: nothing new, every memory unchanged
    page.goto(f"{up_console}/ns/{ns}")
    with page.expect_download() as download:
        page.get_by_test_id("export").click()
    exported = tmp_path / "export.jsonl"
    download.value.save_as(exported)
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    page.locator("input[type=file]").set_input_files(str(exported))
    page.get_by_role("button", name="import", exact=True).click()
    page.locator(".notice").filter(has_text="imported 0 memories (4 unchanged").wait_for()

    # delete-matching: a dry run first, then the confirmation
    page.goto(f"{up_console}/ns/{ns}/delete-matching")
    page.locator("input[name=category]").fill("decision")
    page.get_by_role("button", name="dry run").click()
    assert page.get_by_test_id("dry-run").inner_text().startswith("1 memory would be deleted")
    with stack.client(namespace=ns) as client:
        assert client.count() == 4  # the dry run deleted nothing
    shot(page, "delete-matching")
    page.get_by_role("button", name="yes, delete 1").click()
    page.locator(".notice").filter(has_text="deleted 1 memories").wait_for()

    # delete one memory from its page
    page.goto(f"{up_console}/ns/{ns}/m/{ids['svelte']}")
    page.get_by_test_id("delete-form").get_by_role("button", name="delete").click()
    page.locator(".notice").filter(has_text=f"deleted {ids['svelte']}").wait_for()
    assert page.get_by_test_id("count").inner_text().startswith("2 memories")
    with stack.client(namespace=ns) as client:
        assert {m.id for m in client.iter_memories()} == {ids["manager"], ids["address"]}
    # deleted memories on request: marked, struck through, without a page to open
    page.goto(f"{up_console}/ns/{ns}?include_deleted=on")
    assert page.get_by_test_id("count").inner_text().startswith("4 memories")
    deleted = page.get_by_test_id("memories").locator("tr.deleted")
    assert deleted.count() == 2 and deleted.locator("a").count() == 0
    assert SVELTE in deleted.first.inner_text() or SVELTE in deleted.nth(1).inner_text()


def test_a_read_only_key_sees_and_cannot_change(page: Any, plain_console: tuple[str, Path, int],
                                                console_ns: dict[str, Any], dsn: str,
                                                stack: Stack) -> None:
    url, log_path, _ = plain_console
    ns, ids = console_ns["ns"], console_ns["ids"]
    reader = api_key(dsn, (ns,), scopes=("read",), name="console reader")

    # not signed in: sent to the sign-in page; a wrong key is refused there
    page.goto(f"{url}/ns/{ns}")
    page.wait_for_url(re.compile(r"/sign-in"))
    shot(page, "sign-in")
    page.locator("input[name=key]").fill("rmk_not_a_key")
    page.get_by_role("button", name="sign in").click()
    assert "refused this key" in page.locator(".error").inner_text()

    page.locator("input[name=key]").fill(reader)
    page.get_by_role("button", name="sign in").click()
    page.wait_for_url(re.compile(rf"/ns/{ns}$"))  # back where it was going
    assert page.get_by_test_id("count").is_visible()

    # it sees only its namespace
    page.goto(f"{url}/")
    assert [r.inner_text() for r in page.get_by_test_id("namespaces").locator(
        "tbody td:first-child").all()] == [ns]

    # an action is refused by the gateway, and nothing changed
    page.goto(f"{url}/ns/{ns}/m/{ids['manager']}")
    assert page.get_by_test_id("read-only").is_visible()
    page.get_by_test_id("pin-button").click()
    assert "may not" in page.get_by_test_id("error").inner_text()
    with stack.client(namespace=ns) as client:
        before = client.get(ids["manager"])

    # the key is nowhere: not in a page, a URL or the console's log
    for path in ("/", f"/ns/{ns}", f"/ns/{ns}/m/{ids['manager']}", f"/ns/{ns}/recall?q=maya"):
        response = page.goto(url + path)
        assert reader not in page.content() and reader not in page.url
        assert reader not in str(response.headers)
    cookies = page.context.cookies()
    assert [c["name"] for c in cookies] == ["recallmesh_session"]
    assert cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert reader not in cookies[0]["value"]
    assert reader not in log_path.read_text(encoding="utf-8")
    with stack.client(namespace=ns) as client:
        assert client.get(ids["manager"]) == before


def test_a_forged_form_is_refused(page: Any, plain_console: tuple[str, Path, int],
                                  console_ns: dict[str, Any], dsn: str, stack: Stack) -> None:
    url, _, metrics_port = plain_console
    ns, ids = console_ns["ns"], console_ns["ids"]
    writer = api_key(dsn, (ns,), scopes=("read", "write"), name="console writer")
    page.goto(f"{url}/sign-in")
    page.locator("input[name=key]").fill(writer)
    page.get_by_role("button", name="sign in").click()
    page.wait_for_url(f"{url}/")

    target = f"{url}/ns/{ns}/m/{ids['deploy']}/delete"
    # the session's cookie, no CSRF token: refused
    forged = page.context.request.post(target, form={"purge": "on"})
    assert forged.status == 403 and "CSRF" in forged.text()
    # a wrong token: refused
    forged = page.context.request.post(target, form={"csrf": "x" * 43})
    assert forged.status == 403
    # the session's own token, sent from another site: refused
    page.goto(f"{url}/ns/{ns}/m/{ids['manager']}")
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    forged = page.context.request.post(target, form={"csrf": token},
                                       headers={"Origin": "http://evil.example",
                                                "Sec-Fetch-Site": "cross-site"})
    assert forged.status == 403
    with stack.client(namespace=ns) as client:
        assert client.get(ids["manager"]).id == ids["manager"]
        assert client.count(include_deleted=True) >= 1
    # each refusal is counted: two without a valid token, one from another site
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        exported = reply.read().decode()
    assert metric(exported, 'recallmesh_console_refused_total{why="csrf"}') >= 2
    assert metric(exported, 'recallmesh_console_refused_total{why="origin"}') >= 1
    assert metric(exported, 'recallmesh_console_sign_ins_total{outcome="ok"}') >= 1
    assert 'route="/ns/{namespace}/m/{id}/delete"' in exported and ns not in exported


def metric(exported: str, series: str) -> float:
    for line in exported.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{series} is not exported")


def test_signed_out_and_expired_sessions(browser: Any, plain_console: tuple[str, Path, int],
                                         dsn: str, console_ns: dict[str, Any]) -> None:
    url, _, _ = plain_console
    key = api_key(dsn, (console_ns["ns"],), scopes=("read",), name="console session")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{url}/sign-in")
    page.locator("input[name=key]").fill(key)
    page.get_by_role("button", name="sign in").click()
    page.wait_for_url(f"{url}/")
    page.get_by_role("button", name="sign out").click()
    page.wait_for_url(re.compile(r"/sign-in"))
    page.goto(f"{url}/")
    page.wait_for_url(re.compile(r"/sign-in"))  # the old cookie opens nothing
    context.close()


def test_a_memorys_relations_both_ways_and_its_superseded_chain(
        page: Any, up_console: str, stack: Stack) -> None:
    ns = f"console-chain-{uuid.uuid4().hex[:8]}"
    with stack.client(namespace=ns) as client:
        first = client.store("Maya's team lead is Tomás Ribeiro", category="fact").memory.id
        second = client.store("Maya's team lead is Ana Costa since May", category="fact",
                              supersedes=[first]).memory.id
        third = client.store("Maya's team lead is Jonas Weber since October", category="fact",
                             supersedes=[second]).memory.id
    page.goto(f"{up_console}/ns/{ns}/m/{first}")
    chain = page.get_by_test_id("superseded-chain").locator("li")
    assert [chain.nth(i).inner_text().split(" 20")[0] for i in range(chain.count())] == [
        "Maya's team lead is Ana Costa since May", "Maya's team lead is Jonas Weber since October"]
    relations = page.get_by_test_id("relations").inner_text()
    assert "is the target of\tsupersedes\t" + second in relations
    page.goto(f"{up_console}/ns/{ns}/m/{second}")
    relations = page.get_by_test_id("relations").inner_text()
    assert "states\tsupersedes\t" + first in relations  # this one supersedes the first
    assert "is the target of\tsupersedes\t" + third in relations  # and was superseded
    # an ended memory is listed only when asked for
    page.goto(f"{up_console}/ns/{ns}")
    assert page.get_by_test_id("count").inner_text().startswith("1 memory")
    page.goto(f"{up_console}/ns/{ns}?include_ended=on")
    assert page.get_by_test_id("count").inner_text().startswith("3 memories")


def scrape(metrics_port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


def test_auto_sign_in_makes_one_session_a_browser_and_only_on_navigation(
        browser: Any, up_console_metrics: tuple[str, int]) -> None:
    url, metrics_port = up_console_metrics
    auto = 'recallmesh_console_sign_ins_total{outcome="auto"}'
    context = browser.new_context()
    page = context.new_page()
    # another site's page: twenty images and a script of the console's address, and a link
    evil = "http://evil.example/"
    tags = "".join(f'<img src="{url}/?n={i}">' for i in range(20))
    context.route(evil, lambda route: route.fulfill(
        content_type="text/html",
        body=f'<html><body>{tags}<script src="{url}/ns/x"></script>'
             f'<a id="go" href="{url}/">console</a></body></html>'))
    before = metric(scrape(metrics_port), auto)
    page.goto(evil)
    page.wait_for_load_state("networkidle")
    assert metric(scrape(metrics_port), auto) == before  # no image or script signed in
    # a link followed from that site is a navigation: signed in once
    page.locator("#go").click()
    page.get_by_test_id("namespaces").wait_for()
    assert metric(scrape(metrics_port), auto) == before + 1
    # the same browser coming again from another site (its Strict session cookie not sent)
    # finds its session again instead of making another
    for _ in range(3):
        page.goto(evil)
        page.locator("#go").click()
        page.get_by_test_id("namespaces").wait_for()
    assert metric(scrape(metrics_port), auto) == before + 1
    # another browser gets its own
    other = browser.new_context()
    other.new_page().goto(f"{url}/")
    assert metric(scrape(metrics_port), auto) == before + 2
    other.close()
    context.close()


def test_no_page_stays_in_the_browser_after_sign_out(
        browser: Any, plain_console: tuple[str, Path, int], dsn: str,
        console_ns: dict[str, Any]) -> None:
    url, _, _ = plain_console
    ns = console_ns["ns"]
    key = api_key(dsn, (ns,), scopes=("read",), name="console history")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{url}/sign-in?next=/ns/{ns}")
    page.locator("input[name=key]").fill(key)
    page.get_by_role("button", name="sign in").click()
    page.wait_for_url(re.compile(rf"/ns/{ns}$"))
    # a filter htmx swaps in and pushes to the history
    page.locator("input[name=category]").first.fill("fact")
    page.get_by_test_id("filter-form").get_by_role("button", name="apply").click()
    page.wait_for_url(re.compile(r"category=fact"))
    page.get_by_test_id("count").filter(has_text="memories").wait_for()
    # no snapshot of a page is kept in the browser's storage
    assert page.evaluate("sessionStorage.getItem('htmx-history-cache')") is None
    # going back still shows a whole page (asked of the server, not restored from storage)
    page.go_back()
    page.wait_for_url(re.compile(rf"/ns/{ns}$"))
    page.get_by_test_id("filter-form").wait_for()
    assert page.locator("header.top").count() == 1
    page.get_by_role("button", name="sign out").click()
    page.wait_for_url(re.compile(r"/sign-in"))
    # what the browser's storage holds now: htmx's note of the current path (the sign-in
    # page's), no page and no memory
    stored = page.evaluate("Object.fromEntries(Object.entries(sessionStorage))")
    assert set(stored) <= {"htmx-current-path-for-history"}, stored
    assert all(v.startswith("/sign-in") for v in stored.values()), stored
    # back and forward after sign-out show no page of memories
    page.go_back()
    assert MANAGER not in page.content() and SVELTE not in page.content()
    context.close()


ODD_NAMES = ["team", "team/alpha", "team/m/x", "100% done?", "#ops & dev", "équipe/été"]


def test_any_namespace_name_opens_its_own_pages(page: Any, up_console: str,
                                                stack: Stack) -> None:
    run = uuid.uuid4().hex[:6]
    names = [f"odd-{run}-{name}" for name in ODD_NAMES]
    ids = {}
    for name in names:
        with stack.client(namespace=name) as client:
            ids[name] = client.store(f"the memory of {name!r}", category="note",
                                     wait_indexed=True).memory.id
    page.goto(f"{up_console}/?prefix=odd-{run}")
    listed = page.get_by_test_id("namespaces")
    # the header names no namespace on the namespaces page (not Jinja's own "namespace")
    assert page.get_by_test_id("nav-namespace").count() == 0
    assert "jinja2" not in page.content()
    for name in names:
        page.goto(f"{up_console}/?prefix=odd-{run}")
        listed.locator("tr").filter(has=page.get_by_text(name, exact=True)).get_by_role(
            "link").click()
        page.get_by_test_id("count").wait_for()
        assert page.get_by_test_id("nav-namespace").inner_text() == name
        rows = page.get_by_test_id("memories").inner_text()
        assert f"the memory of {name!r}" in rows and rows.count("the memory of") == 1
        # its memory's page, and a form posted back to it
        page.get_by_test_id("memory-link").click()
        page.wait_for_url(re.compile(rf"/m/{ids[name]}$"))
        page.get_by_test_id("pin-button").click()
        page.wait_for_url(re.compile(rf"/m/{ids[name]}$"))
        assert page.get_by_test_id("pinned").is_visible()
        # recall within it finds its memory and only its
        page.get_by_role("link", name="recall", exact=True).click()
        page.locator("input[name=q]").fill("the memory of")
        page.get_by_test_id("recall-form").get_by_role("button", name="recall").click()
        page.get_by_test_id("recall-result").wait_for()
        hits = page.get_by_test_id("hits").locator("tbody tr")
        assert hits.count() == 1 and name in hits.first.inner_text()


def test_a_bad_import_line_is_named_and_nothing_is_imported(
        page: Any, up_console: str, stack: Stack) -> None:
    ns = f"console-import-{uuid.uuid4().hex[:8]}"
    good = json.dumps({"memory": {"id": str(uuid.uuid4()), "content": "a fine memory",
                                  "category": "note", "created_at": "2026-03-01T09:00:00Z",
                                  "updated_at": "2026-03-01T09:00:00Z"}}) + "\n"
    for bad, says in ((b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
                      (b'{"memory": {"id": "x", "importance": ' + b"7" * 5000 + b"}}",
                       "not readable JSON"),
                      (b"\xff\xfe", "not UTF-8"),
                      (b'{"memory": {"id": "%s", "content": "no time"}}' % str(
                          uuid.uuid4()).encode(), "memory.created_at is required")):
        page.goto(f"{up_console}/ns/{ns}")
        page.locator("input[type=file]").set_input_files(files=[{
            "name": "upload.jsonl", "mimeType": "application/x-ndjson",
            "buffer": good.encode() + bad + b"\n"}])
        with page.expect_response(re.compile(r"/import$")) as reply:
            page.get_by_role("button", name="import", exact=True).click()
        assert reply.value.status == 400
        message = page.get_by_test_id("error").inner_text()
        assert "upload.jsonl:2" in message and says in message, message
    with stack.client(namespace=ns) as client:
        assert client.count() == 0
    # a file over the limit is refused before it is read
    big = urllib.request.Request(f"{up_console}/ns/{ns}/import", method="POST", data=b"",
                                 headers={"Content-Length": str(64 * 1024 * 1024)})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(big, timeout=5)
    assert refused.value.code == 413


def test_adding_editing_superseding_and_searching(page: Any, up_console: str,
                                                 stack: Stack) -> None:
    """A person at work: add a memory with its metadata and thread, edit its metadata and
    expiry, supersede it with a newer fact, find the newer one by searching in words the
    memory does not use, and see the namespace's weeks drawn; under the same CSP."""
    ns = f"console-work-{uuid.uuid4().hex[:8]}"
    page.goto(f"{up_console}/ns/{ns}")
    assert "No memory written" in page.get_by_test_id("weeks").inner_text()

    add = page.get_by_test_id("add-form")
    add.locator("textarea[name=content]").fill("Maya's desk is on the third floor, by the window")
    add.locator("input[name=category]").fill("fact")
    add.locator("input[name=tags]").fill("office, maya")
    add.locator("input[name=thread]").fill("office-moves")
    add.locator("textarea[name=metadata]").fill("building=north\nsource=console")
    add.get_by_role("button", name="add").click()
    page.wait_for_url(re.compile(rf"/ns/{ns}/m/[0-9a-f-]{{36}}$"))
    first_url = page.url
    fields = page.get_by_test_id("fields").inner_text()
    assert "building=north" in fields and "source=console" in fields
    assert "office-moves" in fields and "office, maya" in fields

    edit = page.get_by_test_id("update-form")
    edit.locator("textarea[name=metadata]").fill("building=south\nsource=console")
    edit.locator("input[name=expires_at]").fill("2031-01-01")
    edit.get_by_role("button", name="save").click()
    page.wait_for_url(first_url)
    fields = page.get_by_test_id("fields").inner_text()
    assert "building=south" in fields and "2031-01-01" in fields
    versions = page.get_by_test_id("versions").inner_text()
    assert "metadata" in versions and "expires_at" in versions

    supersede = page.get_by_test_id("supersede-form")
    assert supersede.locator("input[name=thread]").input_value() == "office-moves"  # prefilled
    supersede.locator("textarea[name=content]").fill("Maya's desk moved to the fifth floor, "
                                                     "room 5.12")
    supersede.get_by_role("button", name="store the new memory").click()
    page.wait_for_url(re.compile(rf"/ns/{ns}/m/[0-9a-f-]{{36}}$"))
    assert page.url != first_url
    assert "supersedes" in page.get_by_test_id("relations").inner_text()
    page.goto(first_url)
    assert "superseded" in page.locator(".flags").first.inner_text()

    page.goto(f"{up_console}/ns/{ns}")
    assert page.locator("svg.weeks rect.week").count() == 12
    page.get_by_test_id("search").fill("where does Maya sit now?")
    page.get_by_test_id("filter-form").get_by_role("button", name="apply").click()
    page.wait_for_url(re.compile(r"q=where"))
    page.get_by_test_id("count").filter(has_text="most relevant first").wait_for()
    rows = page.get_by_test_id("memories").locator("tbody tr")
    assert "fifth floor" in rows.first.inner_text()  # the newer fact first
    ended = rows.filter(has_text="third floor")
    assert ended.count() == 0 or "superseded" in ended.inner_text()  # said, if it comes
    assert float(page.get_by_test_id("score").first.inner_text()) > 0
    shot(page, "memories-search")
