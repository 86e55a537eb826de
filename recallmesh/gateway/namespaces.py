"""ListNamespaces: the namespaces a caller may see that hold memories, with their counts.

The one read that spans namespaces: its request names none, so the interceptor checks only
the scope, and the statement itself is held to the caller's grants (`grants_sql`): an exact
grant is an equality, a prefix pattern (``acme-*``) a starts-with test (``^@``, so no LIKE
pattern to escape), ``*`` no condition; a caller whose grants match nothing reads nothing.
The namespaces' names are walked in index order (`walk`: one probe each), those the grants and
the prefix pass are counted (`_COUNTS`, by name), and pages follow by keyset after the last
namespace of the page before (read from a page token signed like List's, listing.PageTokens):
a page costs the memories of its own namespaces, never those of a large namespace it skips.

What a namespace counts is what Count answers for it without filters (listing.where: live and
current); a namespace is listed while it holds any memory that is not expired (a deleted one
too, until it is purged), and its last_updated is the newest updated_at among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from recallmesh.auth.principal import WILDCARD
from recallmesh.gateway.listing import PageTokens, current
from recallmesh.shared.errors import InvalidArgument
from recallmesh.wire.filters import live
from recallmesh.wire.validation import PAGE_TOKEN_NOT_OURS, NamespacesQuery

# What a ListNamespaces page token starts with (a List token never does).
TOKEN_KIND = "namespaces"


@dataclass(frozen=True)
class NamespaceSummary:
    namespace: str
    memories: int  # what Count answers: live (not deleted, not expired) and current
    pinned: int  # of those
    sensitive: int  # of those
    last_updated: datetime | None  # the newest updated_at, deleted memories included


def grants_sql(grants: Sequence[str], alias: str = "s") -> tuple[str, dict[str, Any]] | None:
    """The SQL condition (and its parameters) of the namespaces `grants` cover; None when
    they cover none (no grant at all)."""
    if WILDCARD in grants:
        return "TRUE", {}
    exact = [g for g in grants if not g.endswith(WILDCARD)]
    prefixes = [g[:-1] for g in grants if g.endswith(WILDCARD)]
    parts, params = [], {}
    if exact:
        parts.append(f"{alias}.namespace = ANY(%(g_exact)s::text[])")
        params["g_exact"] = exact
    if prefixes:
        parts.append(f"{alias}.namespace ^@ ANY(%(g_prefixes)s::text[])")
        params["g_prefixes"] = prefixes
    if not parts:
        return None
    return "(" + " OR ".join(parts) + ")", params


def page_token(pages: PageTokens, query: NamespacesQuery, last: str) -> str:
    """The token of the page after the one ending at namespace `last`."""
    return pages.seal([TOKEN_KIND, query.prefix, last])


def after(pages: PageTokens, query: NamespacesQuery) -> str | None:
    """The namespace a page token continues after; None for the first page."""
    if not query.page_token:
        return None
    values = pages.unseal(query.page_token)
    if len(values) != 3 or values[0] != TOKEN_KIND or not isinstance(values[2], str):
        raise InvalidArgument(PAGE_TOKEN_NOT_OURS)
    if values[1] != query.prefix:
        raise InvalidArgument("page_token continues another listing (the prefix must stay "
                              "the same from page to page)")
    return values[2]


def walk(granted: str, prefix: bool, keyset: bool) -> str:
    """The SELECT of one page's namespaces: those `granted` (a condition on s.namespace)
    covers, starting with %(prefix)s when `prefix`, after %(after)s when `keyset`, that hold a
    memory that is not expired, at most %(limit)s, in order.

    A loose index scan: each namespace is one index probe (the first name after the one
    before), so a namespace of a million memories is skipped in one step; the grants and the
    prefix are tested on the names, before anything of a namespace is read. No ORDER BY after
    the walk: it comes in the index's order, and sorting would walk every namespace before the
    LIMIT."""
    first = "WHERE m.namespace > %(after)s " if keyset else ""
    conditions = ["s.namespace IS NOT NULL", granted]
    if prefix:
        conditions.append("s.namespace ^@ %(prefix)s")
    conditions.append("EXISTS (SELECT 1 FROM memories m WHERE m.namespace = s.namespace AND "
                      f"{live('m', include_deleted=True)})")
    return ("WITH RECURSIVE s(namespace) AS ("
            f"(SELECT m.namespace FROM memories m {first}ORDER BY m.namespace LIMIT 1) "
            "UNION ALL SELECT (SELECT m.namespace FROM memories m "
            "WHERE m.namespace > s.namespace ORDER BY m.namespace LIMIT 1) "
            "FROM s WHERE s.namespace IS NOT NULL) "
            f"SELECT s.namespace FROM s WHERE {' AND '.join(conditions)} LIMIT %(limit)s")


# The counts of the walked namespaces: one statement with the names as values, so the planner
# reads a large namespace as it reads it for Count (a parameterized lookup per name would walk
# a million memories through an index, several times slower).
_COUNTED = f"{live('m')} AND {current('m')}"  # Count's condition, without the namespace
_COUNTS = (
    f"SELECT m.namespace, count(*) FILTER (WHERE {_COUNTED}), "
    f"count(*) FILTER (WHERE {_COUNTED} AND m.pinned), "
    f"count(*) FILTER (WHERE {_COUNTED} AND m.is_sensitive), max(m.updated_at) "
    f"FROM memories m WHERE m.namespace = ANY(%(names)s::text[]) AND "
    f"{live('m', include_deleted=True)} GROUP BY m.namespace")


async def list_page(pool: AsyncConnectionPool, grants: Sequence[str], query: NamespacesQuery,
                    pages: PageTokens) -> tuple[list[NamespaceSummary], str]:
    """One page of the namespaces `grants` cover, and the next page's token ("" when it is
    the last)."""
    last = after(pages, query)  # checked before anything else: a bad token never reaches SQL
    granted = grants_sql(grants)
    if granted is None:
        return [], ""
    clause, params = granted
    params |= {"prefix": query.prefix, "after": last, "limit": query.page_size + 1}
    async with pool.connection() as conn:
        cur = await conn.execute(walk(clause, bool(query.prefix), last is not None), params)
        walked = [r[0] for r in await cur.fetchall()]
        names = walked[:query.page_size]
        cur = await conn.execute(_COUNTS, {"names": names})
        counts = {r[0]: r for r in await cur.fetchall()}
    found = [NamespaceSummary(n, int(r[1]), int(r[2]), int(r[3]), r[4])
             for n in names if (r := counts.get(n)) is not None]  # None: purged meanwhile
    more = len(walked) > query.page_size
    return found, page_token(pages, query, names[-1]) if more else ""
