"""The console's settings, each read once from the environment (docs/configuration.md,
"Console"); the command line's options override them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from recallmesh.shared.settings import ConfigError, env_bool, env_float, env_int, env_str
from recallmesh.wire.channel import DEFAULT_TARGET

DEFAULT_PORT = 8080
DEFAULT_METRICS_PORT = 9458


@dataclass(frozen=True)
class ConsoleSettings:
    target: str = DEFAULT_TARGET  # the gateway (RECALLMESH_TARGET)
    host: str = "127.0.0.1"  # localhost only unless asked (a container sets 0.0.0.0)
    port: int = DEFAULT_PORT
    metrics_port: int = DEFAULT_METRICS_PORT  # 0: no metrics server
    # Show a sensitive memory's text, tags and metadata (as the MCP server's setting does);
    # withheld by default.
    show_sensitive: bool = False
    session_idle_s: float = 1800.0  # a session ends after this long without a request
    session_max_s: float = 12 * 3600.0  # and after this long in all
    # Sign a browser on this machine in with the key in this file, without typing it
    # (`recallmesh up` points it at the local admin key); only for requests from loopback.
    auto_sign_in_key_file: Path | None = None
    # Behind TLS (an Ingress): the session cookie carries Secure.
    secure_cookies: bool = False
    call_timeout_s: float = 10.0  # each call to the gateway

    def __post_init__(self) -> None:
        for name in ("port", "metrics_port"):
            value = getattr(self, name)
            if not 0 <= value <= 65535:
                raise ConfigError(f"console {name} must be within 0..65535, got {value}")
        if self.session_idle_s <= 0 or self.session_max_s <= 0:
            raise ConfigError("console session lifetimes must be positive")
        if self.call_timeout_s <= 0:
            raise ConfigError("console call timeout must be positive")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ConsoleSettings:
        key_file = env_str("RECALLMESH_CONSOLE_AUTO_SIGN_IN_KEY_FILE", "", environ)
        return cls(
            target=env_str("RECALLMESH_TARGET", DEFAULT_TARGET, environ),
            host=env_str("RECALLMESH_CONSOLE_HOST", "127.0.0.1", environ),
            port=env_int("RECALLMESH_CONSOLE_PORT", DEFAULT_PORT, environ=environ),
            metrics_port=env_int("RECALLMESH_CONSOLE_METRICS_PORT", DEFAULT_METRICS_PORT,
                                 environ=environ),
            show_sensitive=env_bool("RECALLMESH_CONSOLE_SHOW_SENSITIVE", False, environ),
            session_idle_s=env_float("RECALLMESH_CONSOLE_SESSION_TTL_S", 1800.0, environ),
            session_max_s=env_float("RECALLMESH_CONSOLE_SESSION_MAX_S", 12 * 3600.0, environ),
            auto_sign_in_key_file=Path(key_file) if key_file else None,
            secure_cookies=env_bool("RECALLMESH_CONSOLE_SECURE_COOKIES", False, environ),
            call_timeout_s=env_float("RECALLMESH_CONSOLE_CALL_TIMEOUT_S", 10.0, environ),
        )
