"""Committed benchmark reports stay summaries: no file under benchmarks/reports/ (or a committed
file under benchmarks/results/, which git ignores) over 200 KB or, for text, 3,000 lines. Detail
(per-query rows, every setting of a grid) is written under benchmarks/results/ by the benchmark
(benchmarks/registry.py); benchmarks/harness/budget.py keeps JSON and plots small."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MAX_BYTES = 200 * 1024
MAX_LINES = 3000
TEXT = {".md", ".json", ".csv", ".txt", ".svg"}
FOLDERS = ("benchmarks/reports", "benchmarks/results")


def committed() -> list[Path]:
    """The files git tracks there (benchmarks/results/ holds uncommitted detail by design);
    every file under benchmarks/reports/ where git is not at hand."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", *FOLDERS], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode()
        return sorted(ROOT / name for name in out.split("\0") if name)
    except (OSError, subprocess.CalledProcessError):
        return sorted(p for p in (ROOT / FOLDERS[0]).rglob("*") if p.is_file())


FILES = [p for p in committed() if p.is_file()]


def test_there_are_reports_to_check() -> None:
    assert any(p.is_relative_to(ROOT / "benchmarks/reports") for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_report_is_inside_the_budget(path: Path) -> None:
    size = path.stat().st_size
    assert size <= MAX_BYTES, f"{path.name}: {size:,} bytes (budget {MAX_BYTES:,})"
    if path.suffix in TEXT:
        lines = path.read_bytes().count(b"\n")
        assert lines <= MAX_LINES, f"{path.name}: {lines:,} lines (budget {MAX_LINES:,})"
