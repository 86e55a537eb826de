"""The gRPC walls: who may call the gateway's RPCs, and who may call an internal service.

GatewayAuth authenticates every call of MemoryService and KeyService (Authenticator), then
checks the method's scope and, for MemoryService, the request's namespace (ListNamespaces names
none: its servicer reads only what the caller's grants cover), before the servicer runs (so
before any SQL of the call). Every method must be listed in METHOD_SCOPES: one that is not is
refused. InternalOnly guards the legs, the embedding, the
fusion service and the indexer when TLS does not already require a client certificate: it
accepts only calls carrying RECALLMESH_INTERNAL_TOKEN. Health checks and reflection stay open
everywhere (probes, grpcurl).

Every refusal of either wall (UNAUTHENTICATED, PERMISSION_DENIED) writes one audit line,
WARNING "call refused" with `audit: "refused"` (audit_refusal; docs/operations/observability.md,
"Audit lines of refused calls").
"""

from __future__ import annotations

import contextvars
import hmac
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from recallmesh.auth.authenticator import Authenticator, bearer_token, presented_key_id
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
    f"/{MEMORY_SERVICE}/ListNamespaces": Scope.READ,
    f"/{KEY_SERVICE}/CreateApiKey": Scope.ADMIN,
    f"/{KEY_SERVICE}/ListApiKeys": Scope.ADMIN,
    f"/{KEY_SERVICE}/RevokeApiKey": Scope.ADMIN,
}

# MemoryService methods whose request names no namespace: only the scope is checked here, and
# the servicer reads nothing beyond the caller's grants (recallmesh/gateway/namespaces.py).
ACROSS_NAMESPACES = frozenset({f"/{MEMORY_SERVICE}/ListNamespaces"})

# The verified caller of the call being served (KeyService and ListNamespaces read it).
CALLER: contextvars.ContextVar[Principal] = contextvars.ContextVar("recallmesh_caller")

Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]


# The longest namespace an audit line quotes from a request (a valid one has at most 128
# characters; a refused call's may be anything the caller sent).
AUDIT_NAMESPACE_CHARS = 160


def audit_refusal(code: str, reason: str, method: str, peer: str, *, namespace: str = "",
                  caller: Principal | None = None, key_id: str = "") -> None:
    """The audit line of one refused call (WARNING, message "call refused"): its status
    code, the method, the namespace it asked for, the peer, the reason (the message the
    caller got) and who it was, as far as known: the API key's id (also of a key that did
    not verify, when well formed), the JWT's subject once verified, the principal's name.
    Never the secret nor the bearer token."""
    if caller is not None:
        key_id = caller.key_id
    log.warning("call refused", extra={
        "audit": "refused",
        "code": code,
        "method": method,
        "namespace": namespace[:AUDIT_NAMESPACE_CHARS],
        "peer": peer,
        "reason": reason,
        "key_id": key_id,
        "subject": caller.subject.removeprefix("jwt:")
        if caller is not None and caller.kind == "jwt" else "",
        "principal": caller.subject if caller is not None else "",
    })


def _asked_namespace(request: Any) -> str:
    """The namespace a request names ("" for a request without one)."""
    value = getattr(request, "namespace", "")
    return value if isinstance(value, str) else ""


class GatewayAuth(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Authenticates, checks the scope and the namespace, then runs the servicer with the
    caller in CALLER. Every UNAUTHENTICATED or PERMISSION_DENIED answer (of this check or of
    the servicer, e.g. KeyService refusing a broader key) writes one audit line."""

    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(self, continuation: Continuation,
                                handler_call_details: grpc.HandlerCallDetails
                                ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or is_open(method):
            return handler
        if handler.unary_unary is None:  # no streaming RPC is public: refuse it whole
            return _refused(handler, method)
        scope = METHOD_SCOPES.get(method)
        behavior = handler.unary_unary
        names_namespace = (method.startswith(f"/{MEMORY_SERVICE}/")
                           and method not in ACROSS_NAMESPACES)

        async def guarded(request: Any, context: grpc.aio.ServicerContext) -> Any:
            metadata = context.invocation_metadata()
            caller: Principal | None = None
            try:
                caller = await self.authenticator.authenticate(metadata)
                if scope is None:
                    raise PermissionDenied(f"{method} is not open to callers")
                caller.require(scope, validation.namespace(request.namespace)
                               if names_namespace else None)
                token = CALLER.set(caller)
                try:
                    return await behavior(request, context)
                finally:
                    CALLER.reset(token)
            except (Unauthenticated, PermissionDenied) as exc:
                audit_refusal(exc.code, exc.message, method, context.peer(),
                              namespace=_asked_namespace(request), caller=caller,
                              key_id=presented_key_id(metadata) if caller is None else "")
                raise

        return grpc.unary_unary_rpc_method_handler(
            guarded, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)


def _refused(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    reason = "not open to callers"

    async def refuse(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        audit_refusal("PERMISSION_DENIED", reason, method, context.peer())
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, reason)

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
        return _unauthenticated(handler, handler_call_details.method)


def _unauthenticated(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
    message = "internal service: only recallmesh's own services may call it"

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> None:
        audit_refusal("UNAUTHENTICATED", message, method, context.peer())
        raise Unauthenticated(message)

    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(
            refuse, request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)

    async def refuse_stream(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        audit_refusal("UNAUTHENTICATED", message, method, context.peer())
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
