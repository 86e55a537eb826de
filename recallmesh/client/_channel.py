"""How the client dials the gateway: credentials, TLS, retries, load balancing (written once
for the blocking and the asyncio client)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import grpc

from recallmesh.shared.credentials import client_api_key
from recallmesh.shared.tls import TlsSettings, channel_credentials
from recallmesh.wire.validation import MAX_REQUEST_BYTES

SERVICE = "recallmesh.v1.MemoryService"
DEFAULT_TARGET = "localhost:50051"
DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RetryPolicy:
    """gRPC's own retries (gRFC A6): a call that fails with UNAVAILABLE or RESOURCE_EXHAUSTED is
    tried again after an exponential, jittered backoff, or after the server's hint
    (`grpc-retry-pushback-ms`, which the gateway sends when it sheds load), never past the
    call's deadline; while most calls fail, retries stop (throttling). Every write is safe to
    retry: the client gives each new memory its id, the write's idempotency key."""

    max_attempts: int = 4  # gRPC caps this at 5
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    backoff_multiplier: float = 2.0
    codes: tuple[str, ...] = ("UNAVAILABLE", "RESOURCE_EXHAUSTED")

    def service_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            # every address the target resolves to (dns:///gateway.ns.svc:50051, or
            # ipv4:10.0.0.1:50051,10.0.0.2:50051) gets its share of the calls
            "loadBalancingConfig": [{"round_robin": {}}],
        }
        if self.max_attempts > 1:
            config["methodConfig"] = [{
                "name": [{"service": SERVICE}],
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


def channel_options(retry: RetryPolicy) -> list[tuple[str, Any]]:
    return [
        ("grpc.enable_retries", 1 if retry.max_attempts > 1 else 0),
        ("grpc.service_config", json.dumps(retry.service_config())),
        ("grpc.max_send_message_length", MAX_REQUEST_BYTES),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_permit_without_calls", 0),
    ]


def credentials(tls: bool | TlsSettings | None) -> tuple[grpc.ChannelCredentials | None,
                                                         list[tuple[str, Any]]]:
    """(channel credentials or None for plaintext, extra options). `tls`: None reads
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


def bearer_token(api_key: str | None, token: str | None) -> str:
    """The credential every call carries: `token` (a JWT) or `api_key` when given, else
    RECALLMESH_API_KEY, else the local key `recallmesh up` wrote (docs/client.md)."""
    if api_key and token:
        raise ValueError("give api_key or token, not both")
    if api_key or token:
        return str(api_key or token)

    return client_api_key()
