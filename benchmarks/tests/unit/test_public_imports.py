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


# The product modules the lab may import, and why (issue 70), in two groups. A module of the
# product outside them is not the lab's to import: add it to its group with its reason, or
# reach it through one of these. An entry nothing imports is dropped (a test says so).
# What a user of the product has: the public client, the wire types and stubs, the policy and
# the settings, the stack that `recallmesh up` runs, the model catalogue, the schema.
USER_HAS: dict[str, str] = {
    "recallmesh.client": "the public typed client: its calls, errors (a refusal's retry hint) "
                         "and JSONL reader",
    "recallmesh.v1": "the wire contracts' generated stubs (docs/api.md)",
    "recallmesh.wire": "the wire types: filters, fields, validation limits, fusion lists, "
                       "channels",
    "recallmesh.policy": "the recall policy: the settings a request or a deployment sets",
    "recallmesh.shared.settings": "settings: the gateway target a client dials by default",
    "recallmesh.gateway.settings": "settings: the gateway's legs and limits",
    "recallmesh.services.embedding.settings": "settings: the embedding service's, and the "
                                              "Embed request's text limit",
    "recallmesh.services.indexer.settings": "settings: the concept merge threshold",
    "recallmesh.services.lexical.settings": "settings: the lexical leg's",
    "recallmesh.services.vector.settings": "settings: the vector leg's",
    "recallmesh.stack": "the local stack `recallmesh up` runs (supervisor, demo, dev certs)",
    "recallmesh.shared.embedded": "the embedded Postgres `recallmesh up` starts, started alone",
    "recallmesh.shared.credentials": "the local admin key a client reads",
    "recallmesh.shared.services": "the services' names and ports",
    "recallmesh.shared.legs": "the legs' names and the legs a deployment runs by default",
    "recallmesh.embedding_models": "the model catalogue, manifests, calibrations and builders",
    "recallmesh.migrations": "the schema `recallmesh migrate` writes, a benchmark database's",
    "recallmesh.integrations": "the framework adapters whose overhead is measured",
    "recallmesh.console.bounds": "the console's upload limits (docs/console.md), filled by the "
                                 "upload benchmark",
}
# The inner parts the lab measures or replays by name, and why: a measurement of one part
# alone (a leg's SQL, a hop, the model in process) or a replay of the gateway's own rules on
# dumped pools, where going through the client would measure something else.
INNER_PARTS: dict[str, str] = {
    "recallmesh.shared.db": "pools, the DSN and lock names for benchmarks that write SQL of "
                            "their own",
    "recallmesh.shared.cjk": "the lexical leg's text rewriting, replayed in SQL benchmarks",
    "recallmesh.services.embedding.core": "the model in process (query levers, precision)",
    "recallmesh.services.embedding.client": "the embedding hop, timed alone",
    "recallmesh.services.embedding.vector_store": "the stored vectors a run reuses",
    "recallmesh.services.graph.extraction": "concepts extracted for prefilled memories",
    "recallmesh.services.lexical": "the lexical leg's statements (bm25, bm25_index, rows, "
                                   "spelling) timed and replayed in SQL, its retriever (core)",
    "recallmesh.services.vector.core": "the vector leg's SQL, plans and count lifetime, timed",
    "recallmesh.services.fusion.core": "the ranker, replayed on dumped pools",
    "recallmesh.gateway.stages": "the recall's stages after the ranker, replayed",
    "recallmesh.gateway.time_window": "the time-window boost, replayed",
    "recallmesh.gateway.query_intent": "the query intent routing, replayed",
    "recallmesh.gateway.context_block": "Context's packing, replayed",
    "recallmesh.gateway.store": "the store's reads and writes, timed",
    "recallmesh.gateway.write_keys": "the duplicate rule's normalised content, replayed",
    "recallmesh.gateway.history": "the write paths under lock, timed",
    "recallmesh.gateway.listing": "the token of a query's last page, made by the gateway's "
                                  "rule (the client reaches it only by walking every page)",
    "recallmesh.gateway.fanout": "the fusion hop benchmark's fan-out",
    "recallmesh.gateway.legs": "the fusion hop benchmark's legs",
    "recallmesh.gateway.fusion_call": "the fusion hop benchmark's call",
}
LAB_MAY_IMPORT: dict[str, str] = USER_HAS | INNER_PARTS

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


def lab_imports() -> list[tuple[str, str]]:
    """Every module the lab imports of the product or its test kit: (where, module)."""
    found = []
    for path in sorted(LAB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for module in imported(node):
                if module.split(".")[0] in ("recallmesh", "tests") and module != "recallmesh":
                    found.append((f"{path.relative_to(LAB.parent)}:{node.lineno} {module}",
                                  module))
    return found


def test_the_lab_imports_only_the_product_modules_its_contract_names():
    found = []
    for where, module in lab_imports():
        if module.startswith("recallmesh."):
            if not allowed(module, tuple(LAB_MAY_IMPORT)):
                found.append(where)
        elif not allowed(module, KIT):
            found.append(where)  # a test module of the product is no helper
    assert found == []


def test_every_entry_of_the_contract_is_imported_and_has_a_reason():
    modules = [module for _, module in lab_imports()]
    unused = [entry for entry in (*LAB_MAY_IMPORT, *KIT)
              if not any(allowed(m, (entry,)) for m in modules)]
    assert unused == []
    assert not set(USER_HAS) & set(INNER_PARTS)
    assert all(reason.strip() for reason in LAB_MAY_IMPORT.values())
    for entry in LAB_MAY_IMPORT:  # each names a module or package of the product
        path = LAB.parent / entry.replace(".", "/")
        assert path.with_suffix(".py").exists() or path.is_dir(), entry
