"""The documentation stays true to the tree: the README opens with the two commands, every
recall setting (recallmesh/policy.py) is documented with its variable, and every relative link
in README.md and docs/ points at a file (and, within markdown, a heading) that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recallmesh.policy import RecallPolicy

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "operations").glob("*.md"))]

FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """The markdown without its fenced code blocks (links there are not links)."""
    return FENCE.sub("", text)


def relative_links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)]  # http:, https:, mailto:


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_readme_starts_with_the_two_commands() -> None:
    blocks = FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert blocks, "README.md has no fenced code block"
    assert blocks[0] == "make run\nmake test\n"


def test_every_recall_setting_and_its_variable_is_in_configuration_md() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = []
    for name, (spec, _) in RecallPolicy.specs().items():
        if f"`{name}`" not in text:
            missing.append(name)
        if spec.env is not None and f"`{spec.env}`" not in text:
            missing.append(spec.env)
    assert not missing, f"docs/configuration.md does not document: {', '.join(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_anchors_in_markdown_links_name_headings_that_exist(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path) if path else page
        if anchor and linked.suffix == ".md" and linked.is_file():
            if anchor not in anchors(linked):
                broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to missing headings: {broken}"


# --- docs/api.md against the code it describes (issue 43: each of these had drifted) -------

API = ROOT / "docs" / "api.md"
REFERENCE_PAGES = [ROOT / "README.md", API, *(ROOT / "docs" / n for n in (
    "cli.md", "client.md", "configuration.md", "mcp.md")),
    *sorted((ROOT / "docs" / "operations").glob("*.md"))]


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[:end.start()] if end else rest


def test_api_md_lists_every_update_path_from_the_code() -> None:
    from recallmesh.wire.memory_fields import UPDATE_PATHS

    text = API.read_text(encoding="utf-8")
    update = section(text, "### `Update`")
    assert f"(allowed: {', '.join(UPDATE_PATHS)})" in update
    rows = {name for row in re.findall(r"^\| ([^|]+) \|", update, re.M)
            for name in re.findall(r"`(\w+)`", row)}
    assert set(UPDATE_PATHS) <= rows, f"paths without a row: {set(UPDATE_PATHS) - rows}"


def test_api_md_has_every_rpc_and_the_scope_each_needs() -> None:
    from recallmesh.auth.interceptors import MEMORY_SERVICE, METHOD_SCOPES
    from recallmesh.v1 import memory_pb2

    text = API.read_text(encoding="utf-8")
    table = section(text, "## MemoryService")
    for method in memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods:
        assert f"| `{method.name}` |" in table, f"{method.name} is not in the RPC table"
    scopes = re.search(r"^- `read` allows (.+?)imply each other", text, re.M | re.S)
    assert scopes, "the scope paragraph is gone"
    sentences = dict(re.findall(r"`(read|write|admin)`\s+allows\s+([^.]+)\.", scopes.group(0)))
    for method, scope in METHOD_SCOPES.items():
        service, name = method.strip("/").split("/")
        if service == MEMORY_SERVICE:
            assert f"`{name}`" in sentences.get(scope.value, ""), (
                f"api.md does not say that {name} needs the {scope.value} scope")


def test_reference_pages_name_the_default_fusion_method() -> None:
    from recallmesh.policy import RecallPolicy

    default = RecallPolicy().method
    said = re.compile(
        r"(?:by default|default fusion)[^.|]{0,40}?\(`(rrf|cc|cc_bounded|calibrated)`")
    for page in REFERENCE_PAGES:
        for found in said.findall(page.read_text(encoding="utf-8")):
            assert found == default, f"{page.name} calls {found!r} the default fusion"


def test_api_md_quotes_every_fixed_refusal_of_fusion_overrides_and_filters() -> None:
    """A rule that refuses with a fixed message (no value in it) is quoted in api.md word for
    word: a rule documented the other way round (all-zero weights "allowed") fails here."""
    text = " ".join(API.read_text(encoding="utf-8").split())
    for module in ("policy.py", "wire/filters.py"):
        source = (ROOT / "recallmesh" / module).read_text(encoding="utf-8")
        for message in re.findall(r'InvalidArgument\("([^"{}]+)"\)', source):
            assert message in text, f"api.md does not quote {message!r} ({module})"


def test_cli_md_names_the_default_model_fetch_model_fetches() -> None:
    from recallmesh.cli import build_parser

    default = build_parser().parse_args(["fetch-model"]).name
    section = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = section.split("### `fetch-model [NAME]`")[1].split("\n### ")[0]
    assert f"(default `{default}`" in section, section[:300]
