"""A namespace's memories many at a time: deleting those that match filters (a dry run
first, then the confirmed deletion), exporting them as JSON lines, and importing a file of
them (bounds.py reads it within the console's limits)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from recallmesh.client.jsonl import InputError, export_line
from recallmesh.console import bounds, forms
from recallmesh.console.guard import namespace_of, strings
from recallmesh.console.paths import ns_url
from recallmesh.console.sessions import Session
from recallmesh.console.state import console_of, see_other

log = logging.getLogger("recallmesh.console")


async def delete_matching(request: Request, session: Session) -> Response:
    console = console_of(request)
    namespace = namespace_of(request)
    if request.method == "GET":
        return console.page(request, "delete_matching.html", session, namespace=namespace,
                            params=dict(request.query_params), dry=None,
                            filter_fields=forms.FILTER_FORM_FIELDS)
    form = strings(request.state.form)
    filters = forms.filter_options(form)
    if not filters:
        raise forms.FormError("give at least one filter: delete-matching never deletes a "
                              "whole namespace (that is DeleteNamespace)")
    purge = form.get("purge") == "on"
    client = console.client(session)
    if form.get("confirm") != "yes":
        dry = await client.delete_matching(namespace=namespace, purge=purge, sample_size=10,
                                           **filters)
        return console.page(request, "delete_matching.html", session, namespace=namespace,
                            params=form, dry=dry, filter_fields=forms.FILTER_FORM_FIELDS)
    done = await client.delete_matching(namespace=namespace, purge=purge, confirm=True,
                                        **filters)
    log.info("deleted %d memories matching filters in %s as %s", done.deleted, namespace,
             session.subject)
    return see_other(ns_url(namespace) + "?" + urlencode(
        {"done": f"{'purged' if purge else 'deleted'} {done.deleted} memories"}))


async def export(request: Request, session: Session) -> Response:
    namespace = namespace_of(request)
    filters = forms.filter_options(dict(request.query_params))
    client = console_of(request).client(session)
    records = client.export(namespace=namespace, **filters)
    first = [record async for record in _take(records, 1)]  # errors before the headers

    async def lines() -> AsyncIterator[bytes]:
        for record in first:
            yield export_line(record).encode()
        async for record in records:
            yield export_line(record).encode()

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    name = f"{namespace}-{stamp}.jsonl".replace('"', "")
    log.info("export of %s started as %s", namespace, session.subject)
    return StreamingResponse(lines(), media_type="application/x-ndjson", headers={
        "content-disposition": f"attachment; filename*=UTF-8''{quote(name)}"})


async def import_(request: Request, session: Session) -> Response:
    namespace = namespace_of(request)
    upload = request.state.form.get("file")
    if not isinstance(upload, UploadFile):
        raise forms.FormError("import: choose a JSONL file (as export writes)")
    if (upload.size or 0) > bounds.MAX_IMPORT_BYTES:
        raise forms.FormError(f"import: the file is larger than "
                              f"{bounds.MAX_IMPORT_BYTES // (1024 * 1024)} MiB; use "
                              f"`recallmesh import`")
    name = (upload.filename or "the file")[:200]
    try:  # parsed in a worker thread: the event loop goes on serving other requests
        records = await run_in_threadpool(bounds.read_export, upload.file, name)
    except InputError as exc:
        raise forms.FormError(f"import: {exc}") from None
    result = await console_of(request).client(session).import_records(records,
                                                                      namespace=namespace)
    log.info("imported %d memories into %s as %s", result.imported, namespace,
             session.subject)
    return see_other(ns_url(namespace) + "?" + urlencode(
        {"done": f"imported {result.imported} memories ({result.unchanged} unchanged, "
                 f"{result.relations_written} relations)"}))


async def _take(records: AsyncIterator[dict[str, Any]], n: int) -> AsyncIterator[dict[str, Any]]:
    for _ in range(n):
        try:
            yield await anext(records)
        except StopAsyncIteration:
            return
