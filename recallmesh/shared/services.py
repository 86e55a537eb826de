"""The service registry: every recallmesh process, its module, its default ports and how many
RPCs it runs at once. The one list the settings, the local-stack supervisor, the CLI's `serve`
and the deploy checks read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Service:
    name: str
    module: str  # what `python -m` runs
    grpc_port: int  # default; RECALLMESH_<NAME>_PORT overrides
    metrics_port: int  # Prometheus over HTTP; RECALLMESH_<NAME>_METRICS_PORT overrides
    # RPCs in progress at once (RECALLMESH_<NAME>_MAX_CONCURRENT_RPCS; 0: no limit); one more
    # is refused at once with RESOURCE_EXHAUSTED. Why these numbers: docs/configuration.md
    # ("Admission control").
    max_concurrent_rpcs: int


# In start order: the model first, then the legs and the indexer, the gateway last.
SERVICES: tuple[Service, ...] = (
    Service("embedding", "recallmesh.services.embedding", 50054, 9454, 128),
    Service("lexical", "recallmesh.services.lexical", 50052, 9452, 64),
    Service("vector", "recallmesh.services.vector", 50053, 9453, 64),
    # serves health and reflection only, which are never counted
    Service("indexer", "recallmesh.services.indexer", 50055, 9455, 16),
    Service("fusion", "recallmesh.services.fusion", 50056, 9456, 64),
    Service("graph", "recallmesh.services.graph", 50057, 9457, 64),
    Service("gateway", "recallmesh.gateway", 50051, 9451, 32),
)
BY_NAME: dict[str, Service] = {service.name: service for service in SERVICES}

# gRPC services every server answers to any caller: never authenticated, never counted
# against admission (a busy pod must still answer its probes).
OPEN_SERVICES = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
                 "grpc.reflection.v1.ServerReflection")


def is_open(method: str) -> bool:
    """Whether a full method name (/package.Service/Method) belongs to an open service."""
    return method.lstrip("/").split("/", 1)[0] in OPEN_SERVICES
