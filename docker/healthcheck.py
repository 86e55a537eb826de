"""The image's HEALTHCHECK: gRPC readiness (health service "") of the service this container runs.

The service is read from PID 1's command line (`recallmesh serve <service>`), its port from the
same settings the service reads (RECALLMESH_<SERVICE>_PORT, else the default port). The MCP
server (`recallmesh mcp --transport http`) and the web console (`recallmesh console`) are checked
on their HTTP /readyz instead (200 once the gateway they call is SERVING). A container that runs
something else (`recallmesh migrate`, a one-shot) is reported healthy. Exit 0 = SERVING or
ready, 1 = anything else.

TLS: with RECALLMESH_TLS_CERT / _KEY / _CA set (recallmesh/shared/tls.py) it dials over TLS,
presenting the process's own certificate (the services but the gateway require one), and checks
the server's certificate for the name RECALLMESH_HEALTHCHECK_SERVER_NAME (default `localhost`:
the k8s/components/tls certificates carry it for this check). Kubernetes' native gRPC probes
cannot speak TLS, so the TLS pods run this as their exec startup and readiness probe; plaintext
pods keep the native gRPC probes (docs/operations/kubernetes.md, "TLS on Kubernetes").
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(args: list[str] | None = None) -> int:
    """`args`: PID 1's command line (tests pass their own)."""
    if args is None:
        try:
            argv = Path("/proc/1/cmdline").read_bytes().split(b"\0")
        except OSError:
            return 0
        args = [a.decode() for a in argv if a]
    if "mcp" in args and "http" in args:
        return http_ready(args, "mcp", "RECALLMESH_MCP_PORT", "8765")
    if "console" in args:
        return http_ready(args, "console", "RECALLMESH_CONSOLE_PORT", "8080")
    if "serve" not in args or args.index("serve") + 1 >= len(args):
        return 0
    service = args[args.index("serve") + 1]

    import dataclasses
    import os

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from recallmesh.shared.settings import ConfigError, ServerConfig
    from recallmesh.shared.tls import TlsSettings
    from recallmesh.wire.channel import dial_blocking

    config = ServerConfig.from_env(service)
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    try:
        tls = TlsSettings.from_env()
    except ConfigError as exc:
        print(f"{service}: {exc}")
        return 1
    if tls.enabled or tls.ca is not None:
        name = os.environ.get("RECALLMESH_HEALTHCHECK_SERVER_NAME", "").strip() or "localhost"
        tls = dataclasses.replace(tls, server_name=name)
    with dial_blocking(f"{host}:{config.port}", tls=tls) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=3)
        except grpc.RpcError as exc:
            print(f"{service}: {exc.code().name}")
            return 1
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    print(f"{service}: {status}")
    return 0 if status == "SERVING" else 1


def http_ready(args: list[str], name: str, port_variable: str, default_port: str) -> int:
    """An HTTP server of the image (`recallmesh mcp --transport http`, `recallmesh console`):
    its /readyz (the gateway it calls is SERVING) on 127.0.0.1, on the port of --port, else
    `port_variable`, else `default_port`."""
    import os
    import urllib.error
    import urllib.request

    port = (args[args.index("--port") + 1] if "--port" in args[:-1]
            else os.environ.get(port_variable, default_port))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=3) as reply:
            print(f"{name}: {reply.read().decode().strip()}")
            return 0
    except urllib.error.HTTPError as exc:
        print(f"{name}: {exc.code} {exc.read().decode().strip()}")
    except OSError as exc:
        print(f"{name}: {exc}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
