"""The image's HEALTHCHECK: gRPC readiness (health service "") of the service this container runs.

The service is read from PID 1's command line (`recallmesh serve <service>`), its port from the
same settings the service reads (RECALLMESH_<SERVICE>_PORT, else the default port). A container
that runs something else (`recallmesh migrate`, a one-shot) is reported healthy. Kubernetes does
not use this: its probes are native gRPC probes (k8s/). Exit 0 = SERVING, 1 = anything else.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    try:
        argv = Path("/proc/1/cmdline").read_bytes().split(b"\0")
    except OSError:
        return 0
    args = [a.decode() for a in argv if a]
    if "serve" not in args or args.index("serve") + 1 >= len(args):
        return 0
    service = args[args.index("serve") + 1]

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from recallmesh.platform.config import ServerConfig

    config = ServerConfig.from_env(service)
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    with grpc.insecure_channel(f"{host}:{config.port}") as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=3)
        except grpc.RpcError as exc:
            print(f"{service}: {exc.code().name}")
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{service}: {status}")
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
