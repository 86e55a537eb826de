"""The HTTP/JSON front of the gateway: a thin ASGI app (Starlette) that turns each POST into
the MemoryService call of the same name on the gateway and its answer back into JSON
(transcode.py). It holds no credential and no state: the caller's `Authorization: Bearer
<API key or JWT>` goes with the call, so the gateway authenticates it and enforces its
scopes exactly as over gRPC (docs/http.md, docs/decisions/0027-http-json.md).

Also: GET / (the methods' paths), GET /openapi.json (the OpenAPI 3.1 description generated
from the protos: openapi.py), /healthz and /readyz (the gateway's health, as the console's).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
from prometheus_client import Counter, Histogram
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from recallmesh.http_api import openapi
from recallmesh.http_api.settings import HttpSettings
from recallmesh.http_api.transcode import (
    METHODS,
    Method,
    Refusal,
    describe,
    error_json,
    read_request,
    response_json,
)
from recallmesh.wire.channel import NO_RETRIES, dial, gateway_options
from recallmesh.wire.health import GatewayHealth
from recallmesh.wire.validation import MAX_REQUEST_BYTES

log = logging.getLogger("recallmesh.http")

REQUESTS = Histogram("recallmesh_http_request_seconds",
                     "Time the HTTP front took to answer a MemoryService call, by method and "
                     "the answer's gRPC code", ["method", "code"],
                     buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
REFUSED = Counter("recallmesh_http_refused_total",
                  "Requests the HTTP front refused before calling the gateway, by why",
                  ["why"])
for _why in ("method", "media_type", "size", "body"):
    REFUSED.labels(_why)

JSON = "application/json"
CHALLENGE = 'Bearer realm="recallmesh"'  # what a 401 asks for: a recallmesh key or JWT


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def _refusal(exc: Refusal) -> Response:
    headers = {"www-authenticate": CHALLENGE} if exc.status == 401 else None
    return _answer(exc.status, error_json(exc.code, exc.message), headers)


def _timeout(request: Request, settings: HttpSettings) -> float:
    """The call's deadline: Connect's `connect-timeout-ms` header, else the setting, never
    more than the setting's ceiling."""
    raw = request.headers.get("connect-timeout-ms", "").strip()
    if not raw:
        return settings.call_timeout_s
    if not raw.isdigit() or len(raw) > 10:
        raise Refusal("INVALID_ARGUMENT", "connect-timeout-ms must be a whole number of ms")
    return min(max(int(raw) / 1000.0, 0.001), settings.max_call_timeout_s)


async def _body(request: Request) -> bytes:
    """The body, at most what one gateway request may hold (refused by its stated length
    before it is read)."""
    stated = request.headers.get("content-length")
    if stated is not None and stated.isdigit() and int(stated) > MAX_REQUEST_BYTES:
        REFUSED.labels("size").inc()
        raise Refusal("RESOURCE_EXHAUSTED", f"the body is larger than a request may be "
                      f"({MAX_REQUEST_BYTES // 2**20} MiB)", status=413)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            REFUSED.labels("size").inc()
            raise Refusal("RESOURCE_EXHAUSTED", f"the body is larger than a request may be "
                          f"({MAX_REQUEST_BYTES // 2**20} MiB)", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def build_app(settings: HttpSettings) -> Starlette:
    health = GatewayHealth(settings.target)
    channel: grpc.aio.Channel | None = None
    calls: dict[str, Callable[..., Any]] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal channel
        channel = dial(settings.target, gateway_options(NO_RETRIES))
        for name, m in METHODS.items():
            calls[name] = channel.unary_unary(
                m.path, request_serializer=m.request.SerializeToString,
                response_deserializer=m.response.FromString)
        log.info("HTTP/JSON for %d MemoryService methods, gateway %s", len(METHODS),
                 settings.target)
        try:
            yield
        finally:
            await channel.close()
            await health.aclose()

    async def call(request: Request) -> Response:
        name = request.path_params["method"]
        method: Method | None = METHODS.get(name)
        started = time.perf_counter()
        code = "OK"
        try:
            if method is None:
                REFUSED.labels("method").inc()
                raise Refusal("UNIMPLEMENTED", f"no MemoryService method {name[:64]!r}; "
                              f"GET / lists them", status=404)
            media = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media != JSON:
                REFUSED.labels("media_type").inc()
                raise Refusal("INVALID_ARGUMENT", f"send the request as {JSON} (Content-Type)",
                              status=415)
            timeout = _timeout(request, settings)
            try:
                message = read_request(method, await _body(request))
            except Refusal:
                REFUSED.labels("body").inc()
                raise
            metadata = []
            if authorization := request.headers.get("authorization"):
                metadata.append(("authorization", authorization))
            try:
                reply = await calls[method.name](message, timeout=timeout, metadata=metadata)
            except grpc.aio.AioRpcError as exc:
                raise Refusal(exc.code().name, exc.details() or exc.code().name) from None
            return _answer(200, response_json(reply))
        except Refusal as exc:
            code = exc.code
            return _refusal(exc)
        finally:
            REQUESTS.labels(name if method else "unknown", code).observe(
                time.perf_counter() - started)

    async def not_post(request: Request) -> Response:
        REFUSED.labels("method").inc()
        return _answer(405, error_json("UNIMPLEMENTED", "MemoryService methods are POST"),
                       {"allow": "POST"})

    async def index(request: Request) -> Response:
        return JSONResponse(describe())

    async def document(request: Request) -> Response:
        return JSONResponse(openapi.document())

    prefix = next(iter(METHODS.values())).path.rsplit("/", 1)[0]
    routes = [
        Route("/", index, methods=["GET"]),
        Route("/openapi.json", document, methods=["GET"]),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route(prefix + "/{method}", call, methods=["POST"]),
        Route(prefix + "/{method}", not_post, methods=["GET", "PUT", "DELETE", "PATCH"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
