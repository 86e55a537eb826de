"""The lab imports the product through public modules only. lint-imports checks the modules
(pyproject.toml's contract "The lab imports the product through public modules only"); these
tests keep that contract's list of private modules whole and check what import-linter cannot
see: the names imported from a product module."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import benchmarks
import recallmesh

LAB = Path(benchmarks.__file__).parent
PRODUCT = Path(recallmesh.__file__).parent
CONTRACT = "The lab imports the product through public modules only: no CLI, no private module"


def private(name: str) -> bool:
    """A module or name part that starts with one underscore (`__init__`, `__version__` are not)."""
    return name.startswith("_") and not name.startswith("__")


def test_the_contract_forbids_every_private_module_of_the_product():
    pyproject = tomllib.loads((LAB.parent / "pyproject.toml").read_text())
    (contract,) = [c for c in pyproject["tool"]["importlinter"]["contracts"]
                   if c["name"] == CONTRACT]
    modules = {
        ".".join(("recallmesh", *path.relative_to(PRODUCT).with_suffix("").parts))
        for path in PRODUCT.rglob("*.py")
    }
    private_modules = {m for m in modules if any(private(part) for part in m.split("."))}
    assert private_modules  # recallmesh.client's own modules: the check has something to see
    assert private_modules <= set(contract["forbidden_modules"])


def test_the_lab_imports_no_private_name_of_the_product():
    found = []
    for path in sorted(LAB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    and node.module.split(".")[0] == "recallmesh"):
                found += [f"{path.relative_to(LAB.parent)}:{node.lineno} {node.module}.{a.name}"
                          for a in node.names if private(a.name)]
    assert found == []
