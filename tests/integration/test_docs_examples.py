"""docs/client.md's Python examples, run in order against the real stack (they cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from recallmesh.stack.supervisor import Stack

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "client.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_client_guide_examples_run(stack: Stack, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setenv("RECALLMESH_TARGET", stack.endpoints["gateway"])
    monkeypatch.setenv("RECALLMESH_API_KEY", stack.api_key)
    monkeypatch.chdir(tmp_path)  # no ca.pem here: the private-CA example is skipped
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 10
    scope: dict[str, Any] = {"__name__": "docs_client_md"}
    for number, block in enumerate(blocks, start=1):
        try:
            exec(compile(block, f"docs/client.md block {number}", "exec"), scope)
        except Exception as exc:
            pytest.fail(f"docs/client.md block {number} failed: {exc!r}\n{block}")
    printed = capsys.readouterr().out
    assert "Relevant memories (most relevant first):" in printed
    assert "NOT_FOUND" in printed and "INVALID_ARGUMENT" in printed


def test_readme_python_examples_run(stack: Stack, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's Python examples (Recall, From an agent), in order: both use the typed client."""
    monkeypatch.setenv("RECALLMESH_TARGET", stack.endpoints["gateway"])
    monkeypatch.setenv("RECALLMESH_API_KEY", stack.api_key)
    blocks = python_blocks((ROOT / "README.md").read_text())
    assert len(blocks) == 2 and all("from recallmesh.client import Client" in b for b in blocks)
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"README.md block {number}", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "Tomás Ribeiro is away until March" in printed and "all legs answered" in printed
    assert "Helix" in printed


def test_integrations_guide_examples_run(stack: Stack, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """docs/integrations.md's LangChain and LlamaIndex examples, in order, with the real
    packages (no model: the chain stops at its prompt)."""
    monkeypatch.setenv("RECALLMESH_TARGET", stack.endpoints["gateway"])
    monkeypatch.setenv("RECALLMESH_API_KEY", stack.api_key)
    blocks = python_blocks((ROOT / "docs" / "integrations.md").read_text())
    assert len(blocks) == 4
    scope: dict[str, Any] = {"__name__": "docs_integrations_md"}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"docs/integrations.md block {number}", "exec"), scope)
    printed = capsys.readouterr().out
    assert "Maya is allergic to peanuts" in printed  # the retriever's, the context's, the node's
    assert printed.count("Maya is allergic to peanuts") >= 3, printed
    assert "['human', 'ai']" in printed
    scope["client"].close()
