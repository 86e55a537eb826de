"""The namespaces the key may see (/) and a namespace's own page (/ns/<namespace>): its
memories a page at a time under the filters, or a search of them by relevance, and the
picture of how many were written each week."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from recallmesh.client import AsyncClient
from recallmesh.console import forms, pictures
from recallmesh.console.guard import namespace_of
from recallmesh.console.origin import partial
from recallmesh.console.sessions import Session
from recallmesh.console.state import console_of

PAGE_SIZE = 25
SEARCH_HITS = 50  # a search on a namespace's list shows at most this many, best first


async def namespaces(request: Request, session: Session) -> Response:
    console = console_of(request)
    listed = await console.client(session).namespaces(
        prefix=request.query_params.get("prefix", ""))
    return console.page(request, "namespaces.html", session, listed=listed,
                        prefix=request.query_params.get("prefix", ""))


async def memories(request: Request, session: Session) -> Response:
    console = console_of(request)
    namespace = namespace_of(request)
    params = dict(request.query_params)
    options = forms.list_options(params)
    client = console.client(session)
    query = params.get("q", "").strip()
    found = None
    if query:  # a search: the namespace's memories by relevance, under the same filters
        result = await client.recall(query, namespace=namespace, k=SEARCH_HITS,
                                     **forms.filter_options(params))
        found = result.hits
        page, total = None, len(found)
    else:
        page, total = await asyncio.gather(
            client.list(namespace=namespace, page_size=PAGE_SIZE,
                        page_token=params.get("page_token", ""), **options),
            client.count(namespace=namespace, **forms.count_options(options)))
    part = partial(request)
    written = [] if part else await weekly_counts(client, namespace)
    kept = {k: v for k, v in params.items() if k != "page_token"}
    return console.page(request, "_memory_rows.html" if part else "memories.html",
                        session, namespace=namespace, page=page, found=found, query=query,
                        total=total, params=params, kept=kept, weeks=written,
                        bars=pictures.bars(written), picture_size=(
                            pictures.WIDTH, pictures.HEIGHT, pictures.LABEL_H),
                        filter_fields=forms.FILTER_FORM_FIELDS, orders=forms.ORDERS)


async def weekly_counts(client: AsyncClient, namespace: str) -> list[pictures.Week]:
    spans = pictures.weeks(datetime.now(UTC))
    counts = await asyncio.gather(*(
        client.count(namespace=namespace, created_after=w.start, created_before=w.end)
        for w in spans))
    return [pictures.Week(w.start, w.end, n) for w, n in zip(spans, counts, strict=True)]
