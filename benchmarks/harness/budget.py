"""What keeps a committed report inside its size budget
(benchmarks/tests/unit/test_report_budget.py: at most 200 KB and 3,000 lines a file under
benchmarks/reports/).

Summary JSON that stays readable and small in a diff: containers that fit on one line are
written on one line, larger ones one item a line (`json.dumps(indent=1)` puts every number on
a line of its own, so a summary of a few dozen configurations runs to thousands of lines).
The data is exactly what `json.dumps` writes; only the layout differs."""

from __future__ import annotations

import json
from typing import Any

WIDTH = 110


def compact_json(value: Any, width: int = WIDTH, _indent: int = 0) -> str:
    flat = json.dumps(value)
    if not isinstance(value, dict | list) or not value or len(flat) + _indent <= width:
        return flat
    pad, end = " " * (_indent + 1), " " * _indent
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(key)}: {compact_json(item, width, _indent + 1)}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    items = [pad + compact_json(item, width, _indent + 1) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + end + "]"


def save_png(fig: Any, path: Any, dpi: int = 120) -> None:
    """A matplotlib figure as a 256-colour PNG (a line plot loses nothing visible; a 9x10 inch
    plot goes from about 220 to about 75 KB, inside the reports' size budget)."""
    import io

    from PIL import Image  # matplotlib's own dependency

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    Image.open(buffer).convert("RGB").quantize(256).save(path, optimize=True)
