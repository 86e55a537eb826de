"""The gRPC walls: who may call the gateway's RPCs, and who may call an internal service.

GatewayAuth authenticates every call of MemoryService and KeyService (Authenticator), then
checks the method's scope and, for MemoryService, the request's namespace, before the
servicer runs (so before any SQL of the call). Every method must be listed in
METHOD_SCOPES: one that is not is refused. InternalOnly guards the legs, the embedding, the
fusion service and the indexer when TLS does not already require a client certificate: it
accepts only calls carrying RECALLMESH_INTERNAL_TOKEN. Health checks and reflection stay open
everywhere (probes, grpcurl).
"""

from __future__ import annotations

import contextvars
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from recallmesh.auth.authenticator import Authenticator, bearer_token
from recallmesh.auth.principal import Principal, Scope
from recallmesh.shared.errors import PermissionDenied, RequestError, Unauthenticated
from recallmesh.shared.services import is_open
from recallmesh.shared.settings import AuthSettings, ConfigError
from recallmesh.shared.tls import PUBLIC_SERVICE, TlsSettings
from recallmesh.wire import validation

log = logging.getLogger(__name__)

MEMORY_SERVICE = "recallmesh.v1.MemoryService"
KEY_SERVICE = "recallmesh.v1.KeyService"
METHOD_SCOPES: dict[str, Scope] = {
    f"/{MEMORY_SERVICE}/Store": Scope.WRITE,
    f"/{MEMORY_SERVICE}/StoreBatch": Scope.WRITE,
    f"/{MEMORY_SERVICE}/Update": Scope.WRITE,
    f"/{MEMORY_SERVICE}/Delete": Scope.WRITE,
    f"/{MEMORY_SERVICE}/Get": Scope.READ,
    f"/{MEMORY_SERVICE}/Recall": Scope.READ,
    f"/{MEMORY_SERVICE}/Context": Scope.READ,
    f"/{MEMORY_SERVICE}/List": Scope.READ,
    f"/{MEMORY_SERVICE}/Count": Scope.READ,
    f"/{MEMORY_SERVICE}/History": Scope.READ,
    f"/{MEMORY_SERVICE}/Export": Scope.READ,
    f"/{MEMORY_SERVICE}/Import": Scope.WRITE,
    f"/{MEMORY_SERVICE}/DeleteMatching": Scope.WRITE,
    f"/{MEMORY_SERVICE}/DeleteNamespace": Scope.ADMIN,
    f"/{KEY_SERVICE}/CreateApiKey": Scope.ADMIN,
    f"/{KEY_SERVICE}/ListApiKeys": Scope.ADMIN,
    f"/{KEY_SERVICE}/RevokeApiKey": Scope.ADMIN,
}

# The verified caller of the call being served (KeyService reads it).
CALLER: contextvars.ContextVar[Principal] = contextvars.ContextVar("recallmesh_caller")

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]


def _guarded(handler: grpc.RpcMethodHandler, check: Callable[[Any, Any], Awaitable[Any]]
             ) -> grpc.RpcMethodHandler:
    """`handler` with `check(request, context)` run first; its result is the caller."""
    behavior = handler.unary_unary

    async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> Any:
        token = CALLER.set(await check(request, context))
        try:
            return await behavior(request, context)
        finally:
            CALLER.reset(token)

    return grpc.unary_unary_rpc_method_handler(
        wrapped, request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer)


class GatewayAuth(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(self, continuation: Continuation,
                                handler_call_details: grpc.HandlerCallDetails
                                ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or is_open(method):
            return handler
        scope = METHOD_SCOPES.get(method)

        async def check(request: Any, context: grpc.aio.ServicerContext) -> Principal:
            caller = await self.authenticator.authenticate(context.invocation_metadata())
            if scope is None or handler.unary_unary is None:
                raise PermissionDenied(f"{method} is not open to callers")
            namespace = (validation.namespace(request.namespace)
                         if method.startswith(f"/{MEMORY_SERVICE}/") else None)
            try:
                caller.require(scope, namespace)
            except PermissionDenied:
                log.info("permission denied", extra={"caller": caller.subject, "method": method})
                raise
            return caller

        if handler.unary_unary is None:  # no streaming RPC is public: refuse it whole
            return _refused(handler)
        return _guarded(handler, check)


def _refused(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    async def refuse(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, "not open to callers")

    return grpc.stream_stream_rpc_method_handler(
        refuse, request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer)


class InternalOnly(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Refuses every call but health and reflection that lacks the internal token."""

    def __init__(self, token: str) -> None:
        self.expected = f"{token}".encode()

    async def intercept_service(self, continuation: Continuation,
                                handler_call_details: grpc.HandlerCallDetails
                                ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or is_open(handler_call_details.method):
            return handler
        try:
            token = bearer_token(handler_call_details.invocation_metadata)
        except RequestError:
            token = ""
        if hmac.compare_digest(token.encode(), self.expected):
            return handler
        return _unauthenticated(handler)


def _unauthenticated(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    message = "internal service: only recallmesh's own services may call it"

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
        raise Unauthenticated(message)

    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            refuse, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)

    async def refuse_stream(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    return grpc.stream_stream_rpc_method_handler(
        refuse_stream, request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer)


def internal_guard(service: str, auth: AuthSettings, tls: TlsSettings
                   ) -> grpc.aio.ServerInterceptor | None:
    """The wall of an internal service: none when authentication is off or mutual TLS
    already admits only the services' own certificates; the internal token otherwise.
    ConfigError when authentication is required and neither is configured."""
    if service == PUBLIC_SERVICE or not auth.required:
        return None
    if tls.enabled and tls.requires_client_cert(service):
        return None
    if not auth.internal_token:
        raise ConfigError(
            f"the {service} service must accept internal callers only: configure mutual TLS "
            "(RECALLMESH_TLS_CERT/KEY/CA) or set RECALLMESH_INTERNAL_TOKEN (the same secret "
            "in every service), or RECALLMESH_AUTH=off for local development")
    return InternalOnly(auth.internal_token)
