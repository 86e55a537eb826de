"""One memory: storing a new one in a namespace, its page (what it says, its versions and
what superseded it), and what changes it: an edit, a superseding memory, pinning, deletion."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from recallmesh.client import Memory, NotFoundError
from recallmesh.console import forms
from recallmesh.console.guard import namespace_of, strings
from recallmesh.console.paths import ns_url
from recallmesh.console.sessions import Session
from recallmesh.console.state import console_of, see_other

log = logging.getLogger("recallmesh.console")

MAX_CHAIN = 20  # superseded-by steps followed on a memory's page


async def store(request: Request, session: Session) -> Response:
    namespace = namespace_of(request)
    content, fields = forms.new_memory(strings(request.state.form))
    stored = await console_of(request).client(session).store(content, namespace=namespace,
                                                             **fields)
    log.info("stored %s in %s as %s", stored.memory.id, namespace, session.subject)
    return see_other(ns_url(namespace, "m", stored.memory.id))


async def supersede(request: Request, session: Session) -> Response:
    namespace = namespace_of(request)
    memory_id = request.path_params["memory_id"]
    content, fields = forms.new_memory(strings(request.state.form))
    stored = await console_of(request).client(session).store(
        content, namespace=namespace, supersedes=[memory_id], **fields)
    log.info("stored %s in %s superseding %s as %s", stored.memory.id, namespace,
             memory_id, session.subject)
    return see_other(ns_url(namespace, "m", stored.memory.id))


async def memory(request: Request, session: Session) -> Response:
    console = console_of(request)
    namespace = namespace_of(request)
    memory_id = request.path_params["memory_id"]
    client = console.client(session)
    history = await client.history(memory_id, namespace=namespace)
    chain: list[Memory] = []
    current = history.memory
    while current.superseded_by and len(chain) < MAX_CHAIN:
        try:
            current = await client.get(current.superseded_by, namespace=namespace)
        except NotFoundError:
            break
        chain.append(current)
    return console.page(request, "memory.html", session, namespace=namespace,
                        memory=history.memory, history=history, chain=chain,
                        sensitive_ever=history.memory.sensitive or any(
                            v.memory.sensitive for v in history.versions))


async def update(request: Request, session: Session) -> Response:
    console = console_of(request)
    namespace = namespace_of(request)
    memory_id = request.path_params["memory_id"]
    client = console.client(session)
    current = await client.get(memory_id, namespace=namespace)
    form = strings(request.state.form)
    if not console.shown(current):
        form.pop("content", None)  # the page did not show it: it cannot have changed it
        form.pop("tags", None)
    changed = forms.update_fields(form, current)
    if changed:
        await client.update(memory_id, namespace=namespace, **changed)
        log.info("updated %s in %s (%s) as %s", memory_id, namespace,
                 ", ".join(sorted(changed)), session.subject)
    return see_other(ns_url(namespace, "m", memory_id))


async def pin(request: Request, session: Session) -> Response:
    """Pins or unpins, by the path's last word."""
    namespace = namespace_of(request)
    memory_id = request.path_params["memory_id"]
    pinned = request.url.path.endswith("/pin")
    await console_of(request).client(session).update(memory_id, namespace=namespace,
                                                     pinned=pinned)
    log.info("%s %s in %s as %s", "pinned" if pinned else "unpinned", memory_id, namespace,
             session.subject)
    return see_other(ns_url(namespace, "m", memory_id))


async def delete(request: Request, session: Session) -> Response:
    namespace = namespace_of(request)
    memory_id = request.path_params["memory_id"]
    purge = strings(request.state.form).get("purge") == "on"
    await console_of(request).client(session).delete(memory_id, namespace=namespace,
                                                     purge=purge)
    log.info("%s %s in %s as %s", "purged" if purge else "deleted", memory_id, namespace,
             session.subject)
    return see_other(ns_url(namespace) + "?" + urlencode(
        {"done": f"{'purged' if purge else 'deleted'} {memory_id}"}))
