"""The image test (make image-test): every recallmesh service as its own container of one image.

  python docker/image_test.py [--image recallmesh:local] [--keep]
                              [--pg-textsearch-image pg-textsearch:1.0.0-18]

0. with --pg-textsearch-image (make image-test passes it): the pg_textsearch extension image
   (docker/pg_textsearch/Dockerfile) holds exactly its files in CloudNativePG's layout, read
   from `docker save` (the image's own layers, nothing a container adds): lib/pg_textsearch.so
   (an x86-64 ELF), share/extension/pg_textsearch.control (default_version 1.0.0), its install
   and upgrade scripts, the licence; its labels and non-root user (check_extension_image);
1. an embedded PostgreSQL 18 + pgvector on the host (the `embedded` extra of the host's .venv):
   the image carries no Postgres (production uses CloudNativePG), and a second image made only
   to run the embedded wheel would test nothing of ours; its Unix socket is bind-mounted into
   the containers (read-only root, uid 10001), so the database needs no TCP port at all;
2. `recallmesh migrate` as a one-shot container (must exit 0), then the first admin key the way
   docs/operations/kubernetes.md bootstraps a deployment's: `recallmesh keys create --database
   --name ops --namespace '*' --scope admin,read,write` as a one-shot container with the
   gateway's settings (what `kubectl exec deploy/recallmesh-gateway -- ...` runs), the key read
   from its stdout;
3. every service as its own container: `--network host` (the only network used here), each
   bound to 127.0.0.1 on free ports, read-only root filesystem with a tmpfs /tmp, uid 10001,
   all capabilities dropped, no-new-privileges; waits for each one's gRPC health (from the host);
   authentication is on (the overlay's RECALLMESH_AUTH=required) and every service gets the
   internal token the overlay reads from the Secret recallmesh-internal-token (a fresh one here);
4. the walls: the gateway refuses a call without a credential (UNAUTHENTICATED); the embedding
   container refuses a call without the internal token and answers one with it; through the
   gateway, the admin key creates an application key for one namespace (KeyService), which is
   refused another namespace (PERMISSION_DENIED);
5. stores memories and recalls them through the gateway container with the application key (real
   gRPC from the host): a word-overlap query (lexical leg) and a paraphrase that shares no word
   with its answer (vector leg: the indexer container embedded it through the embedding
   container), not degraded;
6. every container's gRPC health ("" readiness and "liveness") SERVING without a credential
   (health stays open), and Docker's own HEALTHCHECK (docker/healthcheck.py inside the
   container) healthy;
6b. the MCP server (k8s/components/mcp) as a container of the same image, no credential of its
   own: a request without a bearer is 401; the MCP SDK's client, with the application key over
   streamable HTTP, lists the tools, stores a memory, recalls it by a paraphrase (first), forgets
   it; its Docker HEALTHCHECK (its /readyz) healthy;
6c. the web console (k8s/components/console) as a container of the same image, no credential of
   its own, against the gateway container (`recallmesh console --target ... --host 127.0.0.1
   --port ... --metrics-port ...`): /healthz 200, /readyz 200 once the gateway serves, a
   `recallmesh_console_` metric family on its metrics port, the sign-in page 200 with a
   Content-Security-Policy starting "default-src 'none'" and the package's own scripts and
   stylesheets it links served (none from elsewhere), its process uid 10001 (the image's user);
   its Docker HEALTHCHECK (its /readyz) healthy;
7. prints the containers it ran (name, image, command, status), then stops them with SIGTERM
   (the image's STOPSIGNAL): each must exit 0 within the grace period; removes everything.

What each container runs (command and arguments, environment, ports) is read from the rendered
dev overlay (tests/deploy/rendered.py; needs kubectl), not written here a second time. Run from
the repository root with it on sys.path (make image-test: PYTHONPATH=.). Exit status 0 = passed,
1 = failed (reason printed).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.shared.tls import TlsSettings
from recallmesh.stack.supervisor import free_port
from recallmesh.v1 import (
    embedder_pb2,
    embedder_pb2_grpc,
    keys_pb2,
    keys_pb2_grpc,
    memory_pb2,
    memory_pb2_grpc,
)
from recallmesh.wire.channel import dial_blocking

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
# The first admin key of a deployment, as docs/operations/kubernetes.md creates it (`kubectl exec
# deploy/recallmesh-gateway -- ...`): written straight into the database, shown once on stdout.
BOOTSTRAP_KEY = ["recallmesh", "keys", "create", "--database", "--name", "ops",
                 "--namespace", "*", "--scope", "admin,read,write"]


@dataclass
class Spec:
    """One container: what it runs and its environment, as the dev overlay declares them."""

    name: str                      # service name (gateway, lexical, ...) or "migrate"
    command: list[str]             # k8s command + args (docker --entrypoint + the rest)
    env: dict[str, str] = field(default_factory=dict)
    secret_env: list[str] = field(default_factory=list)   # from Secrets: RECALLMESH_DSN, ...
    ports: dict[str, int] = field(default_factory=dict)   # containerPort by name: grpc, metrics


def service_specs() -> tuple[Spec, list[Spec], Spec, Spec]:
    """(the migrate Job, the services' Deployments in start order, the MCP server of
    k8s/components/mcp, the web console of k8s/components/console), as the dev overlay has
    them.

    Read from `kubectl kustomize k8s/overlays/dev` through the k8s checks' helper
    (tests/deploy/rendered.py: ConfigMaps resolved, Secret references named), not written here a
    second time; the test only adds what a pod would get from its own network namespace and
    from Secrets (see ImageTest.test).
    """
    from tests.deploy.rendered import service_specs as rendered_specs

    specs = rendered_specs("dev")
    missing = {"migrate", "mcp", "console", *SERVICES} - set(specs)
    if missing:
        raise Failed(f"the dev overlay has no {sorted(missing)}")

    def convert(r) -> Spec:
        return Spec(r.name, list(r.command), dict(r.env), sorted(r.secret_env), dict(r.ports))

    return (convert(specs["migrate"]), [convert(specs[name]) for name in SERVICES],
            convert(specs["mcp"]), convert(specs["console"]))


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


def running(container: str) -> Callable[[], None]:
    """An `alive` for wait_for: raises Failed, with the container's log, once it has exited."""
    def alive() -> None:
        st = state(container)
        if not st["Running"]:
            raise Failed(f"{container} exited {st['ExitCode']}:\n{logs(container)}")
    return alive


def http_problem(url: str) -> str | None:
    """None when GET url answers 2xx, else what went wrong (the status and the body's start,
    or the connection's error): a `check` for wait_for."""
    try:
        with urllib.request.urlopen(url, timeout=3):
            return None
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode(errors='replace').strip()[:200]}"
    except OSError as exc:
        return str(exc)


def dial(address: str, token: str = "") -> grpc.Channel:
    """A plaintext channel (the dev overlay has no TLS) carrying `authorization: Bearer
    <token>` on every call when a token is given: an API key (the gateway) or the internal
    token (the other services)."""
    return dial_blocking(address, tls=TlsSettings(), token=token)


def code_of(call: Callable[[], object]) -> str:
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code().name
    return "OK"


def health(address: str, service: str = "") -> str:
    """The health service, without any credential: it stays open behind authentication."""
    with dial(address) as channel:
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


# --------------------------------------------------------------------------- the extension image

# What the pg_textsearch image must hold (docker/pg_textsearch/Dockerfile): CloudNativePG mounts
# it at /extensions/pg_textsearch and appends lib/ to dynamic_library_path, share/ to
# extension_control_path. Besides these, only pg_textsearch's upgrade scripts (EXTENSION_UPGRADE).
EXTENSION_FILES = {
    "lib/pg_textsearch.so",
    "share/extension/pg_textsearch.control",
    "share/extension/pg_textsearch--1.0.0.sql",
    "licenses/pg_textsearch/LICENSE",
    "licenses/pg_textsearch/NOTICE",
}
EXTENSION_UPGRADE = re.compile(r"share/extension/pg_textsearch--[0-9.]+--[0-9.]+\.sql")
EXTENSION_LABELS = {
    "org.opencontainers.image.title": "pg_textsearch",
    "org.opencontainers.image.version": "1.0.0",
    "org.opencontainers.image.licenses": "PostgreSQL",
    "org.opencontainers.image.source": "https://github.com/timescale/pg_textsearch",
}


def image_files(image: str) -> dict[str, bytes]:
    """Every regular file of the image's layers (path -> content), from `docker save`: what
    the image holds, not what a container adds (/etc/hosts, /dev, ...). Failed on anything
    that is neither a file nor a folder, or on a whiteout (a scratch image has none)."""
    saved = subprocess.run(["docker", "save", image], capture_output=True, timeout=120)
    if saved.returncode != 0:
        raise Failed(f"docker save {image}: {saved.stderr.decode()[-500:]}")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(saved.stdout)) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
        for layer_path in manifest[0]["Layers"]:
            layer = outer.extractfile(layer_path)
            with tarfile.open(fileobj=layer) as inner:
                for member in inner.getmembers():
                    name = member.name.removeprefix("./")
                    if member.isdir():
                        continue
                    if not member.isfile() or "/.wh." in f"/{name}":
                        raise Failed(f"{image}: {name} is not a plain file")
                    files[name] = inner.extractfile(member).read()  # type: ignore[union-attr]
    return files


def check_extension_image(image: str) -> None:
    """The pg_textsearch extension image holds exactly its files, in CloudNativePG's layout, with
    its labels and a non-root user; Failed with what differs."""
    config = json.loads(docker("image", "inspect", "-f", "{{json .Config}}", image))
    labels = config.get("Labels") or {}
    wrong = {k: labels.get(k) for k, v in EXTENSION_LABELS.items() if labels.get(k) != v}
    if wrong:
        raise Failed(f"{image}: labels {wrong}, wanted {EXTENSION_LABELS}")
    if config.get("User") in ("", "0", "root", None) or config.get("User", "").startswith("0:"):
        raise Failed(f"{image}: runs as root (User {config.get('User')!r})")
    files = image_files(image)
    missing = EXTENSION_FILES - set(files)
    extra = sorted(f for f in set(files) - EXTENSION_FILES if not EXTENSION_UPGRADE.fullmatch(f))
    if missing or extra:
        raise Failed(f"{image}: missing {sorted(missing)}, unexpected {extra}")
    library = files["lib/pg_textsearch.so"]
    # ELF magic, 64-bit little-endian, e_machine 62 (x86-64): the wheel's only Linux build
    if library[:6] != b"\x7fELF\x02\x01" or int.from_bytes(library[18:20], "little") != 62:
        raise Failed(f"{image}: lib/pg_textsearch.so is not an x86-64 ELF library")
    control = files["share/extension/pg_textsearch.control"].decode()
    if "default_version = '1.0.0'" not in control.splitlines():
        raise Failed(f"{image}: pg_textsearch.control is not 1.0.0:\n{control}")
    upgrades = sorted(f for f in files if EXTENSION_UPGRADE.fullmatch(f))
    if not any(f.endswith("--1.0.0.sql") for f in upgrades):
        raise Failed(f"{image}: no upgrade script to 1.0.0 among {upgrades}")
    size = sum(len(b) for b in files.values())
    say(f"extension image {image}: {len(files)} files ({len(upgrades)} upgrade scripts), "
        f"{size / 1e6:.1f} MB, user {config['User']}, CloudNativePG layout (lib/, "
        "share/extension/), labels as wanted")


# --------------------------------------------------------------------------- the test


class ImageTest:
    def __init__(self, image: str, keep: bool) -> None:
        self.image = image
        self.keep = keep
        self.run_id = uuid.uuid4().hex[:6]
        self.containers: list[str] = []        # in start order
        self.one_shots: set[str] = set()       # migrate, the bootstrap key: exit, no health
        self.admin_key = ""                    # the bootstrapped admin key (every namespace)
        self.internal_token = secrets.token_urlsafe(32)  # the Secret recallmesh-internal-token
        self.addresses: dict[str, str] = {}    # service -> 127.0.0.1:port
        self.tmp = Path(tempfile.mkdtemp(prefix="recallmesh-image-test-"))
        self.tmp.chmod(0o755)  # as root, the embedded Postgres runs as its own system user
        self.pg = None

    # ---- the database (host)

    def start_postgres(self) -> tuple[str, list[str]]:
        """The embedded Postgres on the host; (DSN for the containers, docker mount flags)."""
        from recallmesh.shared.embedded import embedded_dsn, start_embedded

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
        migrate, services, mcp, console = service_specs()
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
        # what the pods read from Secrets: CloudNativePG's DSN, the operator's internal token
        from_secrets = {"RECALLMESH_DSN": dsn, "RECALLMESH_INTERNAL_TOKEN": self.internal_token}

        def environment(spec: Spec) -> dict[str, str]:
            env = dict(spec.env)
            for key, value in env.items():
                target_of = by_overlay_port.get(value.rsplit(":", 1)[-1])
                if key.endswith("_TARGET") and target_of:
                    env[key] = f"127.0.0.1:{ports[target_of][0]}"
            env.update(override)
            for key in spec.secret_env:
                if key not in from_secrets:
                    raise Failed(f"{spec.name}: no value for the secret variable {key}")
                env[key] = from_secrets[key]
            return env

        # 1. migrate, one shot
        say("migrate: " + " ".join(migrate.command))
        name = self.run_one_shot(migrate, environment(migrate), mounts)
        say(f"migrate: exit 0 ({logs(name, 3).splitlines()[-1] if logs(name, 3) else ''})")

        # 2. the first admin key, as in the gateway's pod (its settings, its Secrets)
        gateway = next(s for s in services if s.name == "gateway")
        bootstrap = Spec("bootstrap-key", BOOTSTRAP_KEY, gateway.env, gateway.secret_env)
        name = self.run_one_shot(bootstrap, environment(bootstrap), mounts)
        printed = subprocess.run(["docker", "logs", name], capture_output=True, text=True,
                                 timeout=30)
        self.admin_key = printed.stdout.strip()  # stdout: the key alone; the rest on stderr
        if not self.admin_key.startswith("rmk_") or len(self.admin_key.split()) != 1:
            raise Failed(f"bootstrap key: no key alone on stdout:\n{printed.stderr[-1500:]}")
        said = printed.stderr.strip().splitlines()
        say(f"bootstrap: {' '.join(BOOTSTRAP_KEY)} -> "
            f"{said[0].split(';')[0] if said else 'a key'}")

        # 3. the services, one container each, each waited for
        for s in services:
            name = self.run_container(s, environment(s), mounts)
            start = time.monotonic()

            wait_for(f"{s.name} health", lambda a=self.addresses[s.name]: (
                None if health(a) == "SERVING" else health(a)), READY_TIMEOUT_S, running(name))
            say(f"{s.name}: SERVING on {self.addresses[s.name]} "
                f"({time.monotonic() - start:.1f}s; {' '.join(s.command)})")

        # 4. the walls; an application key for one namespace, made by the admin key
        namespace = f"image-test-{self.run_id}"
        app_key = self.check_walls(namespace)

        # 5. store and recall through the gateway container, with the application key
        self.store_and_recall(namespace, app_key)

        # 6. every container's health: gRPC readiness + liveness, and Docker's HEALTHCHECK
        for s in services:
            address = self.addresses[s.name]
            ready, live = health(address, ""), health(address, "liveness")
            if ready != "SERVING" or live != "SERVING":
                raise Failed(f"{s.name}: readiness {ready}, liveness {live}")
            say(f"health {s.name}: readiness {ready}, liveness {live}")
        for name in self.service_containers():
            def docker_health(name: str = name) -> str | None:
                status = state(name).get("Health", {}).get("Status", "none")
                return None if status == "healthy" else status
            wait_for(f"{name} docker HEALTHCHECK", docker_health, 60)
        say("docker HEALTHCHECK: every service container healthy")

        # 6b. the MCP server (k8s/components/mcp) as its own container, driven by the MCP
        # SDK's own client over streamable HTTP with the application key
        self.mcp_session(mcp, namespace, app_key)
        # 6c. the web console (k8s/components/console) as its own container, over plain HTTP
        self.console_checks(console)
        for name in self.service_containers():
            def docker_health(name: str = name) -> str | None:
                status = state(name).get("Health", {}).get("Status", "none")
                return None if status == "healthy" else status
            wait_for(f"{name} docker HEALTHCHECK", docker_health, 60)
        say("docker HEALTHCHECK: the MCP and console containers healthy (their /readyz)")

        # 7. what ran
        self.print_containers()

        # 8. SIGTERM each (gateway first: reverse start order); each must exit 0 within grace
        for name in reversed(self.service_containers()):
            start = time.monotonic()
            docker("stop", "-t", str(GRACE_S), name, timeout=GRACE_S + 30)
            took = time.monotonic() - start
            st = state(name)
            if st["ExitCode"] != 0 or st["OOMKilled"] or took >= GRACE_S:
                raise Failed(f"{name}: exit {st['ExitCode']} after {took:.1f}s "
                             f"(grace {GRACE_S}s):\n{logs(name)}")
            say(f"stopped {name}: SIGTERM -> exit 0 in {took:.1f}s")
        self.print_containers()

    def run_one_shot(self, spec: Spec, env: dict[str, str], mounts: list[str]) -> str:
        """Run a container to completion; it must exit 0."""
        name = self.run_container(spec, env, mounts)
        self.one_shots.add(name)
        code = docker("wait", name, timeout=300)
        if code != "0":
            raise Failed(f"{spec.name} exited {code}:\n{logs(name)}")
        return name

    def service_containers(self) -> list[str]:
        return [name for name in self.containers if name not in self.one_shots]

    def check_walls(self, namespace: str) -> str:
        """The gateway's and an internal service's walls; returns an application key (read,
        write on `namespace` only) that the admin key created through the gateway."""
        gateway, embedding = self.addresses["gateway"], self.addresses["embedding"]
        recall = memory_pb2.RecallRequest(namespace=namespace, query="anything", k=1)
        with dial(gateway) as channel:
            code = code_of(lambda: memory_pb2_grpc.MemoryServiceStub(channel).Recall(
                recall, timeout=10))
        if code != "UNAUTHENTICATED":
            raise Failed(f"gateway: a recall without a credential got {code}")
        info = embedder_pb2.ModelInfoRequest()
        for what, token, wanted in (("no token", "", "UNAUTHENTICATED"),
                                    ("a wrong token", "not-the-token-" * 3, "UNAUTHENTICATED"),
                                    ("the internal token", self.internal_token, "OK")):
            with dial(embedding, token) as channel:
                code = code_of(lambda channel=channel: embedder_pb2_grpc.EmbedderServiceStub(
                    channel).ModelInfo(info, timeout=10))
            if code != wanted:
                raise Failed(f"embedding: ModelInfo with {what} got {code}, wanted {wanted}")
        say("walls: the gateway refuses a call without a key, the embedding service a call "
            "without the internal token (and answers one with it)")
        with dial(gateway, self.admin_key) as channel:
            created = keys_pb2_grpc.KeyServiceStub(channel).CreateApiKey(
                keys_pb2.CreateApiKeyRequest(name="image-test", namespaces=[namespace],
                                             scopes=["read", "write"]), timeout=10)
        app_key = created.secret
        with dial(gateway, app_key) as channel:
            code = code_of(lambda: memory_pb2_grpc.MemoryServiceStub(channel).Recall(
                memory_pb2.RecallRequest(namespace=f"{namespace}-other", query="x", k=1),
                timeout=10))
        if code != "PERMISSION_DENIED":
            raise Failed(f"gateway: the {namespace} key on another namespace got {code}")
        say(f"keys: the admin key created {created.key.id} (read, write on {namespace}) "
            "through the gateway; another namespace is PERMISSION_DENIED to it")
        return app_key

    def store_and_recall(self, namespace: str, api_key: str) -> None:
        with dial(self.addresses["gateway"], api_key) as channel:
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

    def mcp_session(self, spec: Spec, namespace: str, api_key: str) -> None:
        """`recallmesh mcp --transport http` in a container of the image (its command and
        settings from the overlay, on 127.0.0.1 and a free port here, its memory namespace the
        application key's); no credential of its own. Through the SDK's client: no bearer is
        401; with the key: the tools, a store, a paraphrase recall, a forget."""
        import asyncio
        port = free_port()
        env = {**spec.env, "RECALLMESH_MCP_HOST": "127.0.0.1", "RECALLMESH_MCP_PORT": str(port),
               "RECALLMESH_TARGET": self.addresses["gateway"],
               "RECALLMESH_MCP_NAMESPACE": namespace}
        if spec.secret_env:
            raise Failed(f"mcp: the overlay gives it secrets {spec.secret_env}")
        name = self.run_container(spec, env, [])
        base = f"http://127.0.0.1:{port}"

        wait_for("mcp /readyz", lambda: http_problem(f"{base}/readyz"), READY_TIMEOUT_S,
                 running(name))
        say(f"mcp: ready on {base}/mcp ({' '.join(spec.command)})")
        request = urllib.request.Request(f"{base}/mcp", data=b"{}", method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=10)
            raise Failed("mcp: a request without a bearer token was answered")
        except urllib.error.HTTPError as exc:
            if exc.code != 401:
                raise Failed(f"mcp: a request without a bearer token got {exc.code}") from None
        for line in asyncio.run(mcp_calls(f"{base}/mcp", api_key)):
            say(f"mcp: {line}")

    def console_checks(self, spec: Spec) -> None:
        """`recallmesh console` in a container of the image: its command and settings from the
        overlay, the gateway container, 127.0.0.1 and free ports on its command line; no
        credential of its own. Its health, readiness, metrics, sign-in page (strict CSP, the
        package's own assets) and a non-root process."""
        if spec.secret_env:
            raise Failed(f"console: the overlay gives it secrets {spec.secret_env}")
        port, metrics_port = free_port(), free_port()
        gateway = self.addresses["gateway"]
        # the same values as variables too: the overlay's (0.0.0.0, 8080, 9458) must not win
        env = {**spec.env, "RECALLMESH_TARGET": gateway, "RECALLMESH_CONSOLE_HOST": "127.0.0.1",
               "RECALLMESH_CONSOLE_PORT": str(port),
               "RECALLMESH_CONSOLE_METRICS_PORT": str(metrics_port)}
        command = [*spec.command, "--target", gateway, "--host", "127.0.0.1",
                   "--port", str(port), "--metrics-port", str(metrics_port)]
        name = self.run_container(Spec(spec.name, command, env), env, [])
        base = f"http://127.0.0.1:{port}"

        alive = running(name)
        start = time.monotonic()
        wait_for("console /healthz", lambda: http_problem(f"{base}/healthz"), READY_TIMEOUT_S,
                 alive)
        wait_for("console /readyz", lambda: http_problem(f"{base}/readyz"), READY_TIMEOUT_S,
                 alive)
        say(f"console: /healthz and /readyz 200 on {base} ({time.monotonic() - start:.1f}s; "
            f"{' '.join(command)})")

        with urllib.request.urlopen(f"{base}/sign-in", timeout=10) as reply:
            if reply.status != 200 or urlsplit(reply.url).path != "/sign-in":
                raise Failed(f"console: GET /sign-in -> {reply.status} {reply.url}")
            policy = reply.headers.get("Content-Security-Policy", "")
            page = reply.read().decode()
        if not policy.startswith("default-src 'none'"):
            raise Failed(f"console: /sign-in Content-Security-Policy {policy!r}")
        # what it links resolves to the console itself (nothing fetched from elsewhere at run
        # time) and is served: the package's templates and static files are in the image
        assets = [urljoin(f"{base}/sign-in", a) for a in linked_assets(page)]
        if not assets or any(urlsplit(a).netloc != urlsplit(base).netloc for a in assets):
            raise Failed(f"console: /sign-in links {assets}: wanted the console's own "
                         "scripts and stylesheets only, at least one")
        for asset in assets:
            failed = http_problem(asset)
            if failed:
                raise Failed(f"console: {asset} (linked by /sign-in): {failed}")
        say(f"console: /sign-in 200, Content-Security-Policy {policy.split(';')[0]!r}; "
            f"its assets served from the image: {', '.join(urlsplit(a).path for a in assets)}")

        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                    timeout=10) as reply:
            exposition = reply.read().decode()
        families = sorted(set(re.findall(r"^# TYPE (recallmesh_console_\w+)", exposition,
                                         re.MULTILINE)))
        if not families:
            raise Failed(f"console: no recallmesh_console_ family on :{metrics_port}/metrics")
        say(f"console: metrics on :{metrics_port}: {', '.join(families)}")

        # the process itself, as the kernel sees it: not root (the image's user, 10001)
        pid = docker("inspect", "-f", "{{.State.Pid}}", name)
        uids = next(line.split()[1:] for line in
                    Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("Uid:"))
        user = docker("image", "inspect", "-f", "{{.Config.User}}", self.image)
        if set(uids) != {"10001"} or user != "10001:10001":
            raise Failed(f"console: process uids {uids}, image user {user!r}")
        say(f"console: runs as uid 10001 (real, effective, saved, fs), the image's user {user}")

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


def linked_assets(page: str) -> list[str]:
    """Where a page's <script src> and <link href> point (as written)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            wanted = {"script": "src", "link": "href"}.get(tag)
            for key, value in attrs:
                if key == wanted and value:
                    found.append(value)

    Links().feed(page)
    return found


MCP_MEMORY = "Ravi's daughter plays the cello in the school orchestra."
MCP_PARAPHRASE = "which instrument does Ravi's child play?"


async def mcp_calls(url: str, api_key: str) -> list[str]:
    """One MCP session with the SDK's client; what happened, a line each. Failed when a tool
    is missing, a call fails or the paraphrase does not find the stored memory first."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    said: list[str] = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {api_key}"},
                                  timeout=httpx2.Timeout(60)) as http, \
            Client(streamable_http_client(url, http_client=http),
                   read_timeout_seconds=60) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        wanted = ["context", "count_memories", "forget", "get_memory", "list_memories",
                  "memory_history", "recall", "store_memory", "update_memory"]
        if tools != wanted:
            raise Failed(f"mcp: tools {tools}, wanted {wanted}")
        said.append(f"tools {', '.join(tools)}")

        async def call(tool: str, arguments: dict) -> tuple[str, dict]:
            result = await client.call_tool(tool, arguments)
            text = "\n".join(getattr(c, "text", "") for c in result.content)
            if result.is_error:
                raise Failed(f"mcp: {tool} failed: {text}")
            said.append(f"{tool} {json.dumps(arguments)} -> {text.splitlines()[0]}")
            return text, result.structured_content or {}

        _, stored = await call("store_memory", {"content": MCP_MEMORY, "category": "fact"})
        memory_id = stored["memory"]["id"]
        text, _ = await call("recall", {"query": MCP_PARAPHRASE, "k": 3})
        if memory_id not in text.splitlines()[0]:
            raise Failed(f"mcp: the paraphrase did not recall the memory first:\n{text}")
        await call("forget", {"id": memory_id})
        text, _ = await call("recall", {"query": MCP_PARAPHRASE, "k": 3})
        if memory_id in text:
            raise Failed(f"mcp: a forgotten memory was recalled:\n{text}")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default=os.environ.get("IMAGE", "recallmesh:local"))
    parser.add_argument("--keep", action="store_true", help="leave the containers (debugging)")
    parser.add_argument("--pg-textsearch-image", default="",
                        help="also check this pg_textsearch extension image (make image-test)")
    args = parser.parse_args()
    test = ImageTest(args.image, args.keep)
    try:
        if args.pg_textsearch_image:
            check_extension_image(args.pg_textsearch_image)
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
