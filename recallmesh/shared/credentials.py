"""The client side of authentication: which credential a client sends, and how.

A client of the gateway (the CLI, the benchmarks, your code) sends its API key or JWT as
``authorization: Bearer <token>``: RECALLMESH_API_KEY when set, else the local admin key that
`recallmesh up` wrote to <data dir>/admin.key. Internal channels (gateway and indexer to the
legs, the embedding and the fusion service) send RECALLMESH_INTERNAL_TOKEN when it is set.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from recallmesh.shared.settings import env_str, local_key_path


def client_api_key(environ: Mapping[str, str] | None = None) -> str:
    """RECALLMESH_API_KEY, else the local key file's content, else "" (no credential)."""
    key = env_str("RECALLMESH_API_KEY", "", environ)
    if key:
        return key
    path = local_key_path()
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def internal_token(environ: Mapping[str, str] | None = None) -> str:
    return env_str("RECALLMESH_INTERNAL_TOKEN", "", environ)


def _with_bearer(metadata: Any, token: str) -> list[tuple[str, str]]:
    kept = [(k, v) for k, v in (metadata or ()) if k.lower() != "authorization"]
    return [*kept, ("authorization", f"Bearer {token}")]


class AioBearer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Adds `authorization: Bearer <token>` to every unary call of an asyncio channel."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def intercept_unary_unary(
        self, continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails, request: Any,
    ) -> Any:
        details = client_call_details._replace(
            metadata=_with_bearer(client_call_details.metadata, self.token))
        return await continuation(details, request)


class _Details(collections.namedtuple(
        "_Details", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                     "compression")), grpc.ClientCallDetails):  # type: ignore[misc]  # grpc is untyped
    pass


class Bearer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]  # grpc is untyped
    """The same for a blocking channel."""

    def __init__(self, token: str) -> None:
        self.token = token

    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any],
        client_call_details: grpc.ClientCallDetails, request: Any,
    ) -> Any:
        d = client_call_details
        details = _Details(d.method, d.timeout, _with_bearer(d.metadata, self.token),
                           d.credentials, getattr(d, "wait_for_ready", None),
                           getattr(d, "compression", None))
        return continuation(details, request)
