"""Product comments say what the code does and cite a decision record (docs/decisions/), never
an issue number or a benchmark figure, which go stale at the next run. Checked over every
comment and docstring of the product package (not the generated recallmesh/v1): an issue
number ("issue 54", "(#44)") and the obvious metric figures ("recall@10 0.93", "nDCG@10
0.021") fail."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "recallmesh"
GENERATED = PRODUCT / "v1"

FORBIDDEN = re.compile(
    r"\bissues? \d+"                                   # issue 54, issues 41
    r"|\(#\d+\)"                                       # (#44)
    r"|\b(?:recall|ndcg|mrr|precision)@\d+\s+(?:at\s+|of\s+)?[+-]?\d*\.\d+"  # recall@10 0.93
    r"|\bndcg\s+[+-]?\d*\.\d+",                          # nDCG 0.7
    re.IGNORECASE)


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    last = -2
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT:
            continue
        text = tok.string.lstrip("#")
        if tok.start[0] == last + 1:  # a comment wrapped over lines is one text
            found[-1] = (found[-1][0], f"{found[-1][1]} {text}")
        else:
            found.append((tok.start[0], text))
        last = tok.start[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                found.append((node.body[0].lineno, doc))
    return found


def product_modules() -> list[Path]:
    return sorted(p for p in PRODUCT.rglob("*.py") if GENERATED not in p.parents)


def offences(text: str) -> list[str]:
    return [m.group(0) for m in FORBIDDEN.finditer(" ".join(text.split()))]


def test_the_pattern_catches_what_it_should_and_nothing_else() -> None:
    assert offences("bounded (issue 54)") == ["issue 54"]
    assert offences("see (#44) for why") == ["(#44)"]
    assert offences("left recall@10 at\n 0.93-0.96") == ["recall@10 at 0.93"]
    assert offences("cost LoCoMo 0.021 nDCG@10 0.5") == ["nDCG@10 0.5"]
    assert not offences("the k best by recall@10; RECALLMESH_X=1; #!/bin/sh; 0.9 cosine")
    assert not offences("the issue is the lock; port 50051; a tissue 5 of them")


def test_no_product_comment_names_an_issue_or_a_metric_figure() -> None:
    found = []
    for path in product_modules():
        for line, text in comments_and_docstrings(path):
            found += [f"{path.relative_to(ROOT)}:{line}: {hit!r}" for hit in offences(text)]
    assert not found, ("product comments cite a decision record (docs/decisions/), not an "
                       "issue or a figure:\n" + "\n".join(found))
