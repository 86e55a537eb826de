"""The package's layers (docs/architecture.md, "Repository layout"): the import-linter contracts
of pyproject.toml hold (no import runs from a lower layer up, the client stays light), and no
module hides an import of recallmesh inside a function, where the contracts' reader and a
reader of the file would miss it, to dodge a cycle. The CLI alone loads its commands' modules
when the command runs (`recallmesh recall` must not import the embedding model's code)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "recallmesh"
LAZY_BY_DESIGN = set((PACKAGE / "cli").rglob("*.py"))


def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_no_module_imports_recallmesh_inside_a_function() -> None:
    hidden = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in LAZY_BY_DESIGN or "v1" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if not isinstance(inner, ast.Import | ast.ImportFrom):
                    continue
                names = ([a.name for a in inner.names] if isinstance(inner, ast.Import)
                         else [inner.module or ""])
                hidden += [f"{path.relative_to(ROOT)}:{inner.lineno} {name}"
                           for name in names if name.startswith("recallmesh")]
    assert not hidden, hidden
