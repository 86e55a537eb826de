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


# The product modules the lab may import, and why (issue 70): what a user of the product has
# (the public client, the wire types and stubs, the policy and the settings, the stack that
# `recallmesh up` runs, the model catalogue), and the inner parts the lab measures or replays
# by name. A module of the product outside this list is not the lab's to import: add it here
# with its reason, or reach it through one of these.
LAB_MAY_IMPORT: dict[str, str] = {
    # what a user of the product has
    "recallmesh.client": "the public typed client (and its JSONL reader)",
    "recallmesh.v1": "the wire contracts' generated stubs",
    "recallmesh.wire": "the wire types: filters, fields, validation, fusion lists",
    "recallmesh.policy": "the recall policy: the settings a request or a deployment sets",
    "recallmesh.shared.settings": "settings",
    "recallmesh.gateway.settings": "settings",
    "recallmesh.services.embedding.settings": "settings and the Embed request's text limit",
    "recallmesh.services.indexer.settings": "settings",
    "recallmesh.services.lexical.settings": "settings",
    "recallmesh.services.vector.settings": "settings",
    "recallmesh.stack": "the local stack `recallmesh up` runs (supervisor, demo, dev certs)",
    "recallmesh.embedding_models": "the model catalogue, manifests, calibrations and builders",
    "recallmesh.migrations": "the schema a benchmark database is prepared with",
    "recallmesh.shared.credentials": "the local admin key a client reads",
    "recallmesh.shared.services": "the services' names and ports",
    "recallmesh.shared.db": "pools and lock names for benchmarks that write SQL of their own",
    "recallmesh.shared.embedded": "the embedded Postgres a benchmark starts on its own",
    "recallmesh.shared.cjk": "the lexical leg's text rewriting, replayed in SQL benchmarks",
    "recallmesh.integrations": "the framework adapters whose overhead is measured",
    "recallmesh.console.bounds": "the console's upload limits the upload benchmark fills",
    # the inner parts the lab measures or replays
    "recallmesh.services.embedding.core": "the model in process (query levers, precision)",
    "recallmesh.services.embedding.client": "the embedding hop, timed alone",
    "recallmesh.services.embedding.vector_store": "the stored vectors a run reuses",
    "recallmesh.services.graph.extraction": "concepts extracted for prefilled memories",
    "recallmesh.services.lexical": "the lexical leg's SQL, timed and replayed",
    "recallmesh.services.vector.core": "the vector leg's SQL and plans, timed",
    "recallmesh.services.fusion.core": "the ranker, replayed on dumped pools",
    "recallmesh.gateway.stages": "the recall's stages after the ranker, replayed",
    "recallmesh.gateway.time_window": "the time-window boost, replayed",
    "recallmesh.gateway.query_intent": "the query intent routing, replayed",
    "recallmesh.gateway.context_block": "Context's packing, replayed",
    "recallmesh.gateway.store": "the store's reads and writes, timed",
    "recallmesh.gateway.write_keys": "the duplicate rule's normalised content, replayed",
    "recallmesh.gateway.history": "the write paths under lock, timed",
    "recallmesh.gateway.listing": "page tokens of the listing benchmark",
    "recallmesh.gateway.fanout": "the fusion hop benchmark's fan-out",
    "recallmesh.gateway.legs": "the fusion hop benchmark's legs",
    "recallmesh.gateway.fusion_call": "the fusion hop benchmark's call",
}
# The product's own test kit, which the lab shares (tests/fixtures.py, tests/helpers.py, ...).
KIT = ("tests.fixtures", "tests.helpers", "tests.models", "tests.replication",
       "tests.tiny_nomic", "tests.behaviour")


def allowed(module: str, names: tuple[str, ...]) -> bool:
    return any(module == m or module.startswith(m + ".") for m in names)


def imported(node: ast.AST) -> list[str]:
    """The modules an import statement names (`from package import module`: the module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
        return []
    root = LAB.parent / node.module.replace(".", "/")
    return [f"{node.module}.{a.name}" if (root / f"{a.name}.py").exists()
            or (root / a.name).is_dir() else node.module for a in node.names]


def test_the_lab_imports_only_the_product_modules_its_contract_names():
    found = []
    for path in sorted(LAB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for module in imported(node):
                where = f"{path.relative_to(LAB.parent)}:{node.lineno} {module}"
                if module == "recallmesh" or module.startswith("recallmesh."):
                    if module != "recallmesh" and not allowed(module, tuple(LAB_MAY_IMPORT)):
                        found.append(where)
                elif module.startswith("tests") and not allowed(module, KIT):
                    found.append(where)  # a test module of the product is no helper
    assert found == []
