"""The HTTP/JSON front's settings, each read once from the environment (docs/configuration.md,
"HTTP/JSON API"); the command line's options override them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from recallmesh.shared.settings import ConfigError, env_float, env_int, env_str
from recallmesh.wire.channel import DEFAULT_TARGET

DEFAULT_PORT = 8081
DEFAULT_METRICS_PORT = 9459


@dataclass(frozen=True)
class HttpSettings:
    target: str = DEFAULT_TARGET  # the gateway (RECALLMESH_TARGET)
    host: str = "127.0.0.1"  # localhost only unless asked (a container sets 0.0.0.0)
    port: int = DEFAULT_PORT
    metrics_port: int = DEFAULT_METRICS_PORT  # 0: no metrics server
    call_timeout_s: float = 10.0  # a call's deadline when the request names none
    max_call_timeout_s: float = 60.0  # the longest a request's connect-timeout-ms may ask

    def __post_init__(self) -> None:
        for name in ("port", "metrics_port"):
            value = getattr(self, name)
            if not 0 <= value <= 65535:
                raise ConfigError(f"HTTP API {name} must be within 0..65535, got {value}")
        if not 0 < self.call_timeout_s <= self.max_call_timeout_s:
            raise ConfigError("HTTP API call timeout must be positive and at most its ceiling")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> HttpSettings:
        return cls(
            target=env_str("RECALLMESH_TARGET", DEFAULT_TARGET, environ),
            host=env_str("RECALLMESH_HTTP_HOST", "127.0.0.1", environ),
            port=env_int("RECALLMESH_HTTP_PORT", DEFAULT_PORT, environ=environ),
            metrics_port=env_int("RECALLMESH_HTTP_METRICS_PORT", DEFAULT_METRICS_PORT,
                                 environ=environ),
            call_timeout_s=env_float("RECALLMESH_HTTP_CALL_TIMEOUT_S", 10.0, environ),
            max_call_timeout_s=env_float("RECALLMESH_HTTP_MAX_CALL_TIMEOUT_S", 60.0, environ),
        )
