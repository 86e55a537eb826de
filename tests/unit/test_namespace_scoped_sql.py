"""Every SQL statement the services send to a tenant table is scoped to one namespace.

Read from the source (every string literal of recallmesh/ that holds SQL): a statement that
touches a table with a namespace column must hold an equality on namespace with a value
(`namespace = %(ns)s`, `namespace = %s`, `namespace = ANY(...)`), or be an INSERT that writes
the namespace column. That is what tenant isolation wants anyway, and what sharding by namespace
needs (docs/operations/sharding.md, "A path to sharding": on Citus every such statement routes
to the one shard of its namespace). The exceptions are listed below, each with why; a new
statement that is neither scoped nor listed fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from recallmesh.gateway.listing import where
from recallmesh.gateway.namespaces import grants_sql, walk
from recallmesh.wire.validation import ListQuery

ROOT = Path(__file__).resolve().parents[2]

# Tables with a namespace column (each row belongs to one namespace).
TENANT_TABLES = ("memories", "concepts", "concept_aliases", "concept_edges", "memory_edges",
                 "graph_versions", "lexeme_stats", "namespace_stats", "memory_lexemes",
                 "memory_versions")
# Tenant data without a namespace column: each needs one before the tables are distributed
# (the sharding design says so); their statements are listed here rather than one by one.
UNSCOPED_TABLES = ("embedding_jobs", "memory_concepts")

# (file, function or constant) -> why the statements there are not scoped to one namespace.
EXCEPTIONS = {
    ("recallmesh/gateway/listing.py", "list_page"): "its WHERE is listing.where(), checked below",
    ("recallmesh/gateway/listing.py", "_count"): "its WHERE is listing.where(), checked below",
    ("recallmesh/gateway/listing.py", "delete_matching"):
        "its WHERE is listing.where(), checked below",
    ("recallmesh/gateway/namespaces.py", "walk"):
        "ListNamespaces walks the namespaces' names by design: its WHERE holds the caller's "
        "grants (namespaces.grants_sql, checked below), and it reads only names; their counts "
        "are read by name (namespace = ANY)",
    ("recallmesh/gateway/history.py", "_IMPORT_VERSION"):
        "its columns are store_writes.VERSION_COLUMNS, checked below to hold the namespace",
    ("recallmesh/gateway/history.py", "import_records"):
        "ids are unique in a deployment: an import checks an id in every namespace (one "
        "wording for all, so no tenant learns of another's)",
    ("recallmesh/services/indexer/queue.py", "_CLAIM"):
        "the indexer's work queue spans namespaces (admin: its claimed batch is locked by id)",
    ("recallmesh/services/indexer/queue.py", "_LOCK_MEMORIES"):
        "the indexer's work queue spans namespaces (admin: its claimed batch is locked by id)",
    ("recallmesh/services/indexer/queue.py", "_READ_CLAIMED"):
        "the indexer reads its claimed batch, memories of any namespace, by id (admin)",
    ("recallmesh/services/indexer/queue.py", "_COMPLETE"):
        "the indexer writes its claimed batch's vectors by id (admin)",
    ("recallmesh/services/indexer/expiry.py", "_DUE"):
        "the expiry sweeper finds expired memories in every namespace (admin)",
    ("recallmesh/migrations/bm25_index.py", "stale"):
        "the BM25 index spans the table: its statistics are checked against every live memory "
        "(admin, at start)",
    ("recallmesh/services/embedding/reembed.py", "*"):
        "a model switch re-embeds every namespace (admin, `recallmesh reembed`)",
}

SQL = re.compile(r"\b(SELECT|UPDATE|INSERT\s+INTO|DELETE\s+FROM)\b", re.I)
REFERENCE = re.compile(r"\b(?:FROM|JOIN|UPDATE|INTO|USING)\s+(\w+)", re.I)
SCOPED = re.compile(r"\bnamespace\s*=\s*(?:%|ANY\s*\(|\$)", re.I)
INSERT_WITH_NAMESPACE = re.compile(r"INSERT\s+INTO\s+\w+\s*\(([^)]*)\)", re.I)


def statements() -> list[tuple[str, str, int, str]]:
    """(file, enclosing function or assigned name, line, text) of every string literal holding
    SQL; an f-string's expressions read as {}."""
    found = []
    for path in sorted((ROOT / "recallmesh").rglob("*.py")):
        if "v1" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owners: dict[int, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    owners.setdefault(id(inner), node.name)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                for inner in ast.walk(node):
                    owners.setdefault(id(inner), node.targets[0].id)
        parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                 for v in node.values}
        for node in ast.walk(tree):
            if id(node) in parts:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}"
                               for v in node.values)
            else:
                continue
            if SQL.search(text):
                found.append((str(path.relative_to(ROOT)), owners.get(id(node), ""),
                              node.lineno, " ".join(text.split())))
    return found


def unscoped(text: str) -> list[str]:
    """The tenant tables `text` touches without a namespace equality (an INSERT that writes
    the namespace column is scoped by its values)."""
    tables = {t.lower() for t in REFERENCE.findall(text)} & set(TENANT_TABLES)
    if not tables or SCOPED.search(text):
        return []
    inserted = INSERT_WITH_NAMESPACE.search(text)
    if inserted and "namespace" in inserted.group(1) and len(tables) == 1:
        return []
    return sorted(tables)


def test_the_scanner_sees_the_services_statements() -> None:
    found = statements()
    assert len(found) > 100
    assert unscoped("SELECT id FROM memories WHERE id = %s") == ["memories"]
    assert unscoped("SELECT id FROM memories m WHERE m.namespace = %(ns)s") == []
    assert unscoped("INSERT INTO memory_edges (namespace, src) VALUES (%s, %s)") == []
    assert unscoped("SELECT 1 FROM api_keys WHERE id = %s") == []


def test_every_statement_on_a_tenant_table_is_scoped_to_one_namespace() -> None:
    failures = []
    for file, owner, line, text in statements():
        if (file, owner) in EXCEPTIONS or (file, "*") in EXCEPTIONS:
            continue
        tables = unscoped(text)
        if tables:
            failures.append(f"{file}:{line} ({owner}) {tables}: {text[:120]}")
    assert not failures, "statements not scoped to one namespace:\n" + "\n".join(failures)


def test_the_listed_exceptions_still_exist() -> None:
    owners = {(file, owner) for file, owner, _, _ in statements()}
    files = {file for file, _ in owners}
    for file, owner in EXCEPTIONS:
        assert (file, owner) in owners or (owner == "*" and file in files), (file, owner)


def test_a_version_is_written_with_its_namespace() -> None:
    from recallmesh.gateway.store_writes import VERSION_COLUMNS

    assert "namespace" in [c.strip() for c in VERSION_COLUMNS.split(",")]


def test_listings_where_clause_leads_with_the_namespace() -> None:
    for query in (ListQuery("ns"), ListQuery("ns", include_deleted=True, include_ended=True)):
        clause, params = where(query)
        assert clause.startswith("m.namespace = %(ns)s") and params["ns"] == "ns"


def test_list_namespaces_reads_only_what_the_callers_grants_cover() -> None:
    assert grants_sql(()) is None  # no grant: no statement at all
    assert grants_sql(("*", "acme-x")) == ("TRUE", {})
    clause, params = grants_sql(("acme-*", "beta"))  # type: ignore[misc]
    assert clause == ("(s.namespace = ANY(%(g_exact)s::text[]) "
                      "OR s.namespace ^@ ANY(%(g_prefixes)s::text[]))")
    assert params == {"g_exact": ["beta"], "g_prefixes": ["acme-"]}
    sql = walk(clause, prefix=True, keyset=True)
    # the walked names are held to the grants before any is returned (and counted)
    assert f"SELECT s.namespace FROM s WHERE s.namespace IS NOT NULL AND {clause} AND " in sql


def test_the_tables_without_a_namespace_column_are_the_listed_ones() -> None:
    migrations = "\n".join(p.read_text(encoding="utf-8")
                           for p in sorted((ROOT / "recallmesh" / "migrations").glob("*.sql")))
    tables = dict(re.findall(r"CREATE TABLE (\w+) \((.*?)\n\);", migrations, re.S))
    with_namespace = {name for name, body in tables.items()
                      if re.search(r"^\s*namespace\s", body, re.M)}
    assert with_namespace == set(TENANT_TABLES)
    assert set(UNSCOPED_TABLES) <= set(tables) - with_namespace
