"""Process configuration from environment variables, with documented defaults.

Every recallmesh process reads its settings here and nowhere else. The table in
docs/configuration.md lists each variable; keep the two in step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Ports of the default local layout. Each service also serves Prometheus
# metrics over HTTP on its own port.
DEFAULT_PORTS: dict[str, tuple[int, int]] = {
    # service: (grpc port, metrics port)
    "gateway": (50051, 9451),
    "lexical": (50052, 9452),
}

REPO_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """A setting is present but unusable."""


def _env(
    name: str, default: str | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip()


def env_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    raw = _env(name, environ=environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    raw = _env(name, environ=environ)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = _env(name, default, environ)
    assert value is not None
    return value


def data_dir() -> Path:
    """Where the embedded Postgres keeps its data (RECALLMESH_DATA_DIR, default ./.data)."""
    return Path(env_str("RECALLMESH_DATA_DIR", str(REPO_ROOT / ".data"))).resolve()


def configured_dsn() -> str | None:
    """An external Postgres DSN, or None for the embedded default."""
    return _env("RECALLMESH_DSN")


@dataclass(frozen=True)
class ServerConfig:
    """Where one service listens."""

    name: str
    host: str
    port: int
    metrics_port: int  # 0 disables the metrics HTTP endpoint
    grace_seconds: float = 5.0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServerConfig:
        grpc_port, metrics_port = DEFAULT_PORTS[name]
        prefix = f"RECALLMESH_{name.upper()}_"
        return cls(
            name=name,
            host=env_str(prefix + "HOST", "localhost", environ),
            port=env_int(prefix + "PORT", grpc_port, minimum=1, environ=environ),
            metrics_port=env_int(prefix + "METRICS_PORT", metrics_port, minimum=0, environ=environ),
            grace_seconds=env_float("RECALLMESH_SHUTDOWN_GRACE_S", 5.0, environ),
        )


@dataclass(frozen=True)
class LegTarget:
    name: str
    target: str  # host:port of a RetrieverService


@dataclass(frozen=True)
class GatewaySettings:
    legs: tuple[LegTarget, ...]
    default_budget_ms: int
    reserve_ms: int  # kept back from the budget for fusion + hydration
    leg_depth: int  # candidates asked of each leg (at least k)
    max_message_bytes: int = 64 * 1024 * 1024

    @classmethod
    def from_env(cls) -> GatewaySettings:
        names = [n.strip() for n in env_str("RECALLMESH_LEGS", "lexical").split(",") if n.strip()]
        if not names:
            raise ConfigError("RECALLMESH_LEGS names no leg")
        legs = []
        for name in names:
            target = _env(f"RECALLMESH_{name.upper()}_TARGET")
            if target is None:
                if name not in DEFAULT_PORTS:
                    raise ConfigError(f"leg {name!r} needs RECALLMESH_{name.upper()}_TARGET")
                target = f"localhost:{ServerConfig.from_env(name).port}"
            legs.append(LegTarget(name, target))
        budget = env_int("RECALLMESH_RECALL_BUDGET_MS", 800, minimum=10)
        reserve = env_int("RECALLMESH_RECALL_RESERVE_MS", 50, minimum=0)
        if reserve >= budget:
            raise ConfigError("RECALLMESH_RECALL_RESERVE_MS must be below the budget")
        return cls(
            legs=tuple(legs),
            default_budget_ms=budget,
            reserve_ms=reserve,
            leg_depth=env_int("RECALLMESH_LEG_DEPTH", 50, minimum=1),
        )


@dataclass(frozen=True)
class LexicalSettings:
    # Rows admitted by the OR-broaden step must reach this ts_rank; keeps the
    # broaden step from flooding a short AND result with one-word noise.
    or_min_rank: float = 0.01

    @classmethod
    def from_env(cls) -> LexicalSettings:
        return cls(or_min_rank=env_float("RECALLMESH_LEXICAL_OR_MIN_RANK", 0.01))


@dataclass(frozen=True)
class PoolSettings:
    min_size: int
    max_size: int

    @classmethod
    def from_env(cls) -> PoolSettings:
        return cls(
            min_size=env_int("RECALLMESH_DB_POOL_MIN", 1, minimum=0),
            max_size=env_int("RECALLMESH_DB_POOL_MAX", 10, minimum=1),
        )
