"""A namespace's recall page (/ns/<namespace>/recall): a question's ranked memories beside
the context block it makes, each hit's score explained leg by leg (explain.py)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from recallmesh.console import forms
from recallmesh.console.explain import explain_view
from recallmesh.console.guard import namespace_of
from recallmesh.console.origin import partial
from recallmesh.console.sessions import Session
from recallmesh.console.state import console_of


async def recall(request: Request, session: Session) -> Response:
    console = console_of(request)
    namespace = namespace_of(request)
    params = dict(request.query_params)
    query = params.get("q", "").strip()
    result = context = view = None
    if query:
        client = console.client(session)
        result, context = await asyncio.gather(
            client.recall(query, namespace=namespace, **forms.recall_options(params)),
            client.context(query, namespace=namespace, **forms.context_options(params)))
        view = explain_view(result)
    template = "_recall_result.html" if partial(request) else "recall.html"
    memories_by_id = {hit.memory.id: hit.memory for hit in result.hits} if result else {}
    return console.page(request, template, session, namespace=namespace, query=query,
                        params=params, result=result, context=context, view=view,
                        memories_by_id=memories_by_id, sorts=forms.SORTS,
                        filter_fields=forms.FILTER_FORM_FIELDS)
