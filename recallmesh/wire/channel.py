"""Dialling: the one place a channel to a recallmesh service is made, for the client, the CLI,
the gateway's legs, the indexer, the local stack and the benchmarks alike.

A channel's security comes from the environment (RECALLMESH_TLS_*, recallmesh/shared/tls.py)
unless given; every call carries a bearer credential when one is given (an API key or JWT for
the gateway, the internal token between services); its service config (round robin over every
address the target resolves to, gRPC's own retries with backoff and throttling) comes from a
RetryPolicy: the client's for the gateway, INTERNAL_RETRIES between services."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from recallmesh.shared.credentials import AioBearer, Bearer, internal_token
from recallmesh.shared.services import BY_NAME
from recallmesh.shared.tls import TlsSettings, channel_credentials
from recallmesh.shared.transport import KEEPALIVE_TIME_MS, grpc_options
from recallmesh.wire.validation import MAX_REQUEST_BYTES

MEMORY_SERVICE = "recallmesh.v1.MemoryService"
DEFAULT_TARGET = f"localhost:{BY_NAME['gateway'].grpc_port}"  # RECALLMESH_TARGET overrides

Options = Sequence[tuple[str, Any]]


@dataclass(frozen=True)
class RetryPolicy:
    """gRPC's own retries (gRFC A6): a call that fails with one of `codes` is tried again after
    an exponential, jittered backoff, or after the server's hint (`grpc-retry-pushback-ms`,
    which a server sends when it sheds load), never past the call's deadline; while most calls
    fail, retries stop (throttling: each failure costs a token, each success gives back 0.1,
    and no call is retried while fewer than half the 10 tokens are left). Every write is safe
    to retry: the client gives each new memory its id, the write's idempotency key."""

    max_attempts: int = 4  # gRPC caps this at 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    backoff_multiplier: float = 2.0
    codes: tuple[str, ...] = ("UNAVAILABLE", "RESOURCE_EXHAUSTED")

    def service_config(self, service: str) -> dict[str, Any]:
        config: dict[str, Any] = {
            # every address the target resolves to (dns:///gateway.ns.svc:50051, a headless
            # Service's name, or ipv4:10.0.0.1:50051,10.0.0.2:50051) gets its share of the calls
            "loadBalancingConfig": [{"round_robin": {}}],
        }
        if self.max_attempts > 1:
            config["methodConfig"] = [{
                "name": [{"service": service}],
                "retryPolicy": {
                    "maxAttempts": self.max_attempts,
                    "initialBackoff": f"{self.initial_backoff_s}s",
                    "maxBackoff": f"{self.max_backoff_s}s",
                    "backoffMultiplier": self.backoff_multiplier,
                    "retryableStatusCodes": list(self.codes),
                },
            }]
            config["retryThrottling"] = {"maxTokens": 10, "tokenRatio": 0.1}
        return config


NO_RETRIES = RetryPolicy(max_attempts=1)
# Between services: UNAVAILABLE only (the calls are idempotent; a shed call is the caller's to
# handle), quickly, within a recall's budget.
INTERNAL_RETRIES = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.1,
                               codes=("UNAVAILABLE",))


def gateway_options(retry: RetryPolicy) -> list[tuple[str, Any]]:
    """Options of a client's channel to the gateway (requests up to the gateway's limit)."""
    return [
        ("grpc.enable_retries", 1 if retry.max_attempts > 1 else 0),
        ("grpc.service_config", json.dumps(retry.service_config(MEMORY_SERVICE))),
        ("grpc.max_send_message_length", MAX_REQUEST_BYTES),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_permit_without_calls", 0),
    ]


def internal_options(service: str) -> list[tuple[str, Any]]:
    """Options of a long-lived channel to an internal service (`service`: its full gRPC name):
    fast reconnect, keepalive even when idle, INTERNAL_RETRIES, round robin."""
    return [
        *grpc_options(),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(INTERNAL_RETRIES.service_config(service))),
    ]


def channel_security(tls: bool | TlsSettings | None) -> tuple[grpc.ChannelCredentials | None,
                                                               list[tuple[str, Any]]]:
    """(channel credentials, or None for plaintext; extra options). `tls`: None reads
    RECALLMESH_TLS_* (TLS when a CA or certificate is configured, else plaintext); True is
    TLS with the environment's files or else the system's root certificates; False is
    plaintext; a TlsSettings is used as given."""
    if tls is False:
        return None, []
    settings = tls if isinstance(tls, TlsSettings) else TlsSettings.from_env()
    extra = ([("grpc.ssl_target_name_override", settings.server_name)]
             if settings.server_name else [])
    if settings.enabled or settings.ca is not None:
        return channel_credentials(settings), extra
    if tls is True:
        return grpc.ssl_channel_credentials(), extra
    return None, []


def dial(target: str, options: Options = (), *, tls: bool | TlsSettings | None = None,
         token: str = "", interceptors: Sequence[Any] = ()) -> grpc.aio.Channel:
    """An asyncio channel to `target`; every call carries `token` when given."""
    creds, extra = channel_security(tls)
    calls = [*interceptors, *([AioBearer(token)] if token else [])] or None
    if creds is not None:
        return grpc.aio.secure_channel(target, creds, options=[*options, *extra],
                                       interceptors=calls)
    return grpc.aio.insecure_channel(target, options=list(options), interceptors=calls)


def dial_blocking(target: str, options: Options = (), *, tls: bool | TlsSettings | None = None,
                  token: str = "") -> grpc.Channel:
    """The same as a blocking channel (the client, the CLI, the local stack's health checks)."""
    creds, extra = channel_security(tls)
    channel = (grpc.secure_channel(target, creds, options=[*options, *extra])
               if creds is not None else grpc.insecure_channel(target, options=list(options)))
    return grpc.intercept_channel(channel, Bearer(token)) if token else channel


def dial_internal(target: str, service: str, interceptors: Sequence[Any] = ()
                  ) -> grpc.aio.Channel:
    """A long-lived asyncio channel from one service to another (`service`: the callee's full
    gRPC name), carrying the internal credential RECALLMESH_INTERNAL_TOKEN when set."""
    return dial(target, internal_options(service), token=internal_token(),
                interceptors=interceptors)
