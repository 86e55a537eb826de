"""What one request may cost the console: its body's size, checked before a byte of it is
read, and an import's file, read line by line off the event loop up to a cap
(docs/decisions/0019-console.md, "Bounded requests").

The rule: a request states its size and is refused (413) before it is read when that is
more than its route takes; only the import route takes more than a small form. A file is
parsed in a worker thread one line at a time, each line checked as an exported record, and
the first bad line is the answer (400, naming the line); nothing is sent to the gateway
until the whole file has passed."""

from __future__ import annotations

import time
from typing import IO, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from recallmesh.client.jsonl import InputError, exported_record, import_record, json_line
from recallmesh.console import metrics
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.validation import MAX_REQUEST_BYTES, imported_records

# a form of the console (sign-in, filters, an edit of a memory, delete-matching): its fields
# are short; a memory's content is at most 32 KiB (MAX_CONTENT_BYTES) and arrives escaped
MAX_FORM_BYTES = 256 * 1024
MAX_FORM_FIELDS = 64
# an import's upload: the file and a few fields; larger files: `recallmesh import`
MAX_IMPORT_BYTES = 32 * 1024 * 1024
MAX_IMPORT_RECORDS = 20_000
MAX_IMPORT_LINES = MAX_IMPORT_RECORDS + 1000  # blank lines count too
MAX_IMPORT_BODY = MAX_IMPORT_BYTES + 64 * 1024  # the file, the form's other fields, framing
# lines parsed between two turns of the GIL offered to the event loop's thread (a turn each
# ~2 ms: the interpreter's own switch interval, 5 ms, delays each wake-up of the loop)
YIELD_EVERY = 16
# a line longer than the largest request the gateway takes cannot be imported
MAX_LINE_BYTES = MAX_REQUEST_BYTES
IMPORT_SUFFIX = "/import"


def body_limit(scope: Scope) -> int:
    """The most bytes this request's body may hold."""
    path: str = scope.get("path", "")
    return MAX_IMPORT_BODY if path.startswith("/ns/") and path.endswith(IMPORT_SUFFIX) \
        else MAX_FORM_BYTES


class BodyLimit:
    """Refuses a request whose body is larger than its route takes before reading it: 411
    when a request with a body does not say its length (every browser form does), 413 when
    the length is over the limit; a body longer than it said is cut off by the server."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        raw = headers.get(b"content-length")
        limit = body_limit(scope)
        if raw is None:
            if headers.get(b"transfer-encoding") is None:
                await self.app(scope, receive, send)  # no body
                return
            await _refuse(send, 411, "refused: say the body's length (Content-Length)")
            return
        try:
            length = int(raw)
        except ValueError:
            await _refuse(send, 411, "refused: Content-Length is not a number")
            return
        if length > limit:
            await _refuse(send, 413, f"refused: the request is larger than this page takes "
                                     f"({limit // 1024} KiB)")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    metrics.REFUSED.labels("size").inc()
    body = (message + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def read_export(handle: IO[bytes], name: str) -> list[dict[str, Any]]:
    """An export's records from a file, one line at a time (blocking: run it off the event
    loop). Each line is checked as the gateway's Import checks a record, so that the answer
    names the line: InputError naming the first line that is not UTF-8, longer than a
    request, not JSON, not an exported record, one the gateway would refuse, or past
    MAX_IMPORT_RECORDS records or MAX_IMPORT_LINES lines."""
    records: list[dict[str, Any]] = []
    handle.seek(0)
    for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""),
                                 start=1):
        at = f"{name}:{number}"
        if number > MAX_IMPORT_LINES:
            raise InputError(f"{at}: the console reads at most {MAX_IMPORT_LINES} lines a "
                             f"file; use `recallmesh import` for larger ones")
        if len(raw) > MAX_LINE_BYTES:
            raise InputError(f"{at}: longer than {MAX_LINE_BYTES // 2**20} MiB, more than one "
                             "request to the gateway holds")
        try:
            line = raw.decode("utf-8")  # a newline is never inside a character
        except UnicodeDecodeError:
            raise InputError(f"{at}: not UTF-8 text") from None
        if not line.strip():
            continue
        if len(records) >= MAX_IMPORT_RECORDS:
            raise InputError(f"{at}: the console imports at most {MAX_IMPORT_RECORDS} records "
                             f"a file; use `recallmesh import` for larger ones")
        records.append(_importable(exported_record(json_line(line, at), at), at))
        if number % YIELD_EVERY == 0:
            time.sleep(0)  # hands the GIL to the event loop's thread if it waits for it
    return records


def _importable(record: dict[str, Any], at: str) -> dict[str, Any]:
    """The record, if the gateway's Import takes it on its own (the rules of one record;
    a rule across records, an id given twice, is the gateway's to say)."""
    request = memory_pb2.ImportRequest(namespace="import", records=[import_record(record)])
    try:
        imported_records(request)
    except InvalidArgument as exc:
        raise InputError(f"{at}: {str(exc).removeprefix('records[0].')}") from None
    return record
