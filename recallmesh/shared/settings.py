"""Process configuration from environment variables, with documented defaults.

The readers (env_int, env_float, env_bool, env_str...) and the settings every process shares
(where it listens, the database pool, authentication). Each service declares its own settings
class beside its code (recallmesh/services/<name>/settings.py, recallmesh/gateway/settings.py)
with these readers; recall settings are declared once in recallmesh/policy.py. The table
in docs/configuration.md lists each variable; keep them in step.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from recallmesh.shared.services import BY_NAME


class ConfigError(ValueError):
    """A setting is present but unusable."""


def env_optional(
    name: str, default: str | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip()


def env_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    raw = env_optional(name, environ=environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(
    name: str,
    default: float,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: float | None = None,
) -> float:
    raw = env_optional(name, environ=environ)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {raw!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {raw!r}")
    return value


def at_most(name: str, value: int, maximum: int) -> int:
    if value > maximum:
        raise ConfigError(f"{name} must be at most {maximum}, got {value}")
    return value


def parse_bool(raw: str) -> bool:
    """A boolean's text (a variable, the CLI's --set): true/false, 1/0, yes/no, on/off;
    ValueError otherwise."""
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    raw = env_optional(name, environ=environ)
    if raw is None:
        return default
    try:
        return parse_bool(raw)
    except ValueError:
        raise ConfigError(f"{name} must be true or false, got {raw!r}") from None


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = env_optional(name, default, environ)
    assert value is not None
    return value


def data_dir() -> Path:
    """Where the embedded Postgres keeps its data (RECALLMESH_DATA_DIR, default .data in the
    working directory: `make run` runs in the checkout's root)."""
    return Path(env_str("RECALLMESH_DATA_DIR", ".data")).resolve()


def embedded_bm25_index(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the embedded Postgres loads pg_textsearch, and so keeps the lexical leg's BM25
    index on the write path (RECALLMESH_EMBEDDED_BM25_INDEX, off by default:
    docs/decisions/0020-write-locks.md)."""
    return env_bool("RECALLMESH_EMBEDDED_BM25_INDEX", False, environ)


def default_target(name: str, environ: Mapping[str, str] | None = None) -> str:
    """host:port of a service: RECALLMESH_<NAME>_TARGET, else localhost on its configured port."""
    target = env_optional(f"RECALLMESH_{name.upper()}_TARGET", environ=environ)
    if target is not None:
        return target
    if name not in BY_NAME:
        raise ConfigError(f"service {name!r} needs RECALLMESH_{name.upper()}_TARGET")
    return f"localhost:{ServerConfig.from_env(name, environ).port}"


def configured_dsn() -> str | None:
    """An external Postgres DSN, or None for the embedded default."""
    return env_optional("RECALLMESH_DSN")


@dataclass(frozen=True)
class ServerConfig:
    """Where one service listens."""

    name: str
    host: str
    port: int
    metrics_port: int  # 0 disables the metrics HTTP endpoint
    grace_seconds: float = 5.0
    readiness_interval_s: float = 2.0  # how often readiness is checked again
    max_concurrent_rpcs: int = 0  # RPCs in progress at once; 0: no limit

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServerConfig:
        service = BY_NAME[name]
        prefix = f"RECALLMESH_{name.upper()}_"
        return cls(
            name=name,
            host=env_str(prefix + "HOST", "localhost", environ),
            port=env_int(prefix + "PORT", service.grpc_port, minimum=1, environ=environ),
            metrics_port=env_int(prefix + "METRICS_PORT", service.metrics_port, minimum=0,
                                 environ=environ),
            grace_seconds=env_float("RECALLMESH_SHUTDOWN_GRACE_S", 5.0, environ),
            readiness_interval_s=env_float("RECALLMESH_READINESS_INTERVAL_S", 2.0, environ,
                                           minimum=0.1),
            max_concurrent_rpcs=env_int(prefix + "MAX_CONCURRENT_RPCS",
                                        service.max_concurrent_rpcs, minimum=0,
                                        environ=environ),
        )





_DURATION = re.compile(r"^(\d+)\s*([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TTL_S = 100 * 365 * 86400  # a century: longer is no expiry, and would overflow timestamps


def parse_duration_s(text: str, name: str) -> int:
    """Whole seconds from `86400`, `90s`, `15m`, `12h` or `30d`."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise ConfigError(f"{name}: a duration is whole seconds or a number with s, m, h or d, "
                          f"got {text.strip()!r}")
    seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds > MAX_TTL_S:
        raise ConfigError(f"{name}: {text.strip()!r} is longer than {MAX_TTL_S} seconds")
    return seconds


@dataclass(frozen=True)
class PoolSettings:
    min_size: int
    max_size: int
    # The longest wait for a connection (a call's deadline cuts it shorter): psycopg_pool's
    # own default, 30 s, is far beyond any recall budget.
    timeout_s: float = 2.0
    # Callers that may wait for a connection at once; one more is refused at once
    # (RESOURCE_EXHAUSTED). 0: no bound.
    max_waiting: int = 32

    @classmethod
    def from_env(cls) -> PoolSettings:
        return cls(
            min_size=env_int("RECALLMESH_DB_POOL_MIN", 1, minimum=0),
            max_size=env_int("RECALLMESH_DB_POOL_MAX", 10, minimum=1),
            timeout_s=env_float("RECALLMESH_DB_POOL_TIMEOUT_S", 2.0, minimum=0.01),
            max_waiting=env_int("RECALLMESH_DB_POOL_MAX_WAITING", 32, minimum=0),
        )


@dataclass(frozen=True)
class ReadSettings:
    """Reads from a streaming replica (recallmesh/shared/replicas.py). No read DSN: every
    read goes to the primary (RECALLMESH_DSN)."""

    dsn: str = ""  # RECALLMESH_READ_DSN: a hot standby (CloudNativePG's -ro Service)
    # Reads leave a replica whose replay is further behind the primary than this.
    max_lag_s: float = 5.0
    check_interval_s: float = 1.0  # how often the replica's position is checked
    # The longest wait for a replica connection before the read goes to the primary.
    replica_wait_s: float = 0.25

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReadSettings:
        return cls(
            dsn=env_str("RECALLMESH_READ_DSN", "", environ),
            max_lag_s=env_float("RECALLMESH_READ_MAX_LAG_S", 5.0, environ, minimum=0.0),
            check_interval_s=env_float("RECALLMESH_READ_CHECK_S", 1.0, environ, minimum=0.05),
            replica_wait_s=env_float("RECALLMESH_READ_REPLICA_WAIT_S", 0.25, environ,
                                     minimum=0.01),
        )


# How callers prove who they are (recallmesh/auth). `required` (the default): the gateway
# answers only API keys and JWTs, and internal services only internal callers (mutual TLS, or
# RECALLMESH_INTERNAL_TOKEN when TLS is off). `off`: no credential is asked for anywhere; for
# local development only (every caller can read, write and delete every namespace).
AUTH_MODES = ("required", "off")
# Where `recallmesh up` keeps the local admin key it creates (under the data directory,
# owner-only) and where the CLI looks for a key when RECALLMESH_API_KEY is not set.
LOCAL_KEY_FILE = "admin.key"


def local_key_path() -> Path:
    return data_dir() / LOCAL_KEY_FILE


@dataclass(frozen=True)
class AuthSettings:
    mode: str = "required"
    # How long the gateway trusts a verified API key before looking it up again (a revoked
    # key stops working within this many seconds on every replica).
    key_cache_s: float = 5.0
    # The secret internal services accept from internal callers when TLS is off ("": none).
    internal_token: str = ""
    # JWT bearer tokens: a JWKS (file path or http(s) URL; "" turns JWTs off), the issuer and
    # audience every token must carry, and the claims that list its namespace grants and scopes.
    jwt_jwks: str = ""
    jwt_issuer: str = ""
    jwt_audience: str = ""
    jwt_namespaces_claim: str = "recallmesh_namespaces"
    jwt_scopes_claim: str = "scope"
    jwt_leeway_s: float = 30.0  # clock skew tolerated on exp / nbf / iat

    @property
    def required(self) -> bool:
        return self.mode == "required"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AuthSettings:
        mode = env_str("RECALLMESH_AUTH", "required", environ).lower()
        if mode not in AUTH_MODES:
            raise ConfigError(f"RECALLMESH_AUTH must be one of {', '.join(AUTH_MODES)}, "
                              f"got {mode!r}")
        jwks = env_str("RECALLMESH_JWT_JWKS", "", environ)
        audience = env_str("RECALLMESH_JWT_AUDIENCE", "", environ)
        issuer = env_str("RECALLMESH_JWT_ISSUER", "", environ)
        if jwks and not (audience and issuer):
            raise ConfigError("RECALLMESH_JWT_JWKS needs RECALLMESH_JWT_ISSUER and "
                              "RECALLMESH_JWT_AUDIENCE (every token is checked for both)")
        token = env_str("RECALLMESH_INTERNAL_TOKEN", "", environ)
        if token and len(token) < 32:
            raise ConfigError("RECALLMESH_INTERNAL_TOKEN must be at least 32 characters (e.g. "
                              "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
        return cls(
            mode=mode,
            key_cache_s=env_float("RECALLMESH_AUTH_CACHE_S", 5.0, environ, minimum=0.0),
            internal_token=token,
            jwt_jwks=jwks,
            jwt_issuer=issuer,
            jwt_audience=audience,
            jwt_namespaces_claim=env_str("RECALLMESH_JWT_NAMESPACES_CLAIM",
                                         "recallmesh_namespaces", environ),
            jwt_scopes_claim=env_str("RECALLMESH_JWT_SCOPES_CLAIM", "scope", environ),
            jwt_leeway_s=env_float("RECALLMESH_JWT_LEEWAY_S", 30.0, environ, minimum=0.0),
        )
