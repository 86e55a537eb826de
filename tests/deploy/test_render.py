"""kubectl kustomize renders base and every overlay, and what it renders keeps the runtime
contract: commands, ports, probes, env, security context, scaling."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy import rendered
from tests.deploy.tools import K8S, KUBERNETES_MD, OVERLAYS, ROOT, tool

SERVICES = {
    # service: (gRPC port, metrics port, uses the database)
    "gateway": (50051, 9451, True),
    "lexical": (50052, 9452, True),
    "vector": (50053, 9453, True),
    "embedding": (50054, 9454, False),
    "indexer": (50055, 9455, True),
    "fusion": (50056, 9456, False),
    "graph": (50057, 9457, True),
}
HEADLESS = {"lexical", "vector", "graph", "embedding", "fusion"}
# the services whose recall reads may go to a replica (RECALLMESH_READ_DSN), and the overlays
# with replicas to read from (dev runs one PostgreSQL instance)
READERS = {"gateway", "lexical", "vector", "graph"}
READ_REPLICA_OVERLAYS = ("production", "production-gpu")
NAMESPACES = {"dev": "recallmesh-dev", "production": "recallmesh", "production-gpu": "recallmesh"}
# overlays with k8s/components/tls (cert-manager, mutual TLS); dev stays plaintext
TLS_OVERLAYS = ("production", "production-gpu")
TLS_DIR = "/etc/recallmesh/tls"
HEALTHCHECK = ["python", "/opt/recallmesh/healthcheck.py"]
DIGEST = re.compile(r"^[a-z0-9.\-/]+:[\w.\-]+@sha256:[0-9a-f]{64}$")
# the internal services' wall where mutual TLS is not: the internal token, from a Secret the
# operator creates (k8s/components/internal-token; never in Git)
TOKEN_OVERLAYS = ("dev",)
INTERNAL_TOKEN = ("recallmesh-internal-token", "token")
# overlays with k8s/components/mcp (the MCP server for agents in the cluster)
MCP_OVERLAYS = {"dev": {"recallmesh-mcp"}}
# overlays with k8s/components/console (the web console); off in the production overlays
CONSOLE_OVERLAYS = {"dev": {"recallmesh-console"}}
# overlays with k8s/components/http (the HTTP/JSON API)
HTTP_OVERLAYS = {"dev": {"recallmesh-http"}}
# the HTTP clients of the gateway (no gRPC server of their own, no credential of their own)
GATEWAY_CLIENTS = ("mcp", "console", "http")


@pytest.fixture(scope="module", autouse=True)
def _kubectl() -> None:
    tool("kubectl")


def objects(target: str) -> list[dict[str, Any]]:
    return rendered.render(target)


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


@pytest.mark.parametrize("target", ["base"] + [f"overlays/{o}" for o in OVERLAYS])
def test_renders(target: str) -> None:
    objs = objects(target)
    kinds = {o["kind"] for o in objs}
    assert {"Deployment", "Service", "ConfigMap", "Job", "NetworkPolicy", "Cluster", "Database",
            "PodMonitor", "PrometheusRule", "ServiceAccount"} <= kinds
    overlay = target.removeprefix("overlays/")
    extra = (MCP_OVERLAYS.get(overlay, set()) | CONSOLE_OVERLAYS.get(overlay, set())
             | HTTP_OVERLAYS.get(overlay, set()))
    assert set(by_kind(objs, "Deployment")) == {f"recallmesh-{s}" for s in SERVICES} | extra


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_in_the_overlay_namespace(overlay: str) -> None:
    for obj in objects(f"overlays/{overlay}"):
        if obj["kind"] == "Namespace":
            assert obj["metadata"]["name"] == NAMESPACES[overlay]
        else:
            assert obj["metadata"]["namespace"] == NAMESPACES[overlay], obj["metadata"]["name"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_image_pinned_by_digest(overlay: str) -> None:
    for obj in objects(f"overlays/{overlay}"):
        if obj["kind"] in ("Deployment", "Job"):
            for c in obj["spec"]["template"]["spec"]["containers"]:
                assert DIGEST.match(c["image"]), (obj["metadata"]["name"], c["image"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_services_keep_the_runtime_contract(overlay: str) -> None:
    objs = objects(f"overlays/{overlay}")
    deployments = by_kind(objs, "Deployment")
    services = by_kind(objs, "Service")
    specs = rendered.service_specs(overlay)
    ns = NAMESPACES[overlay]
    for name, (grpc_port, metrics_port, uses_db) in SERVICES.items():
        spec = specs[name]
        assert spec.command == ["recallmesh", "serve", name]
        assert spec.ports == {"grpc": grpc_port, "metrics": metrics_port}
        assert spec.env[f"RECALLMESH_{name.upper()}_HOST"] == "0.0.0.0"
        assert spec.env["RECALLMESH_MODEL_CACHE"] == "/opt/recallmesh/models"
        assert (spec.secret_env.get("RECALLMESH_DSN") == ("recallmesh-db-app", "uri")) is uses_db
        # production reads from the -ro Service (the replicas); the password comes from the
        # app Secret into the read DSN, the primary's DSN stays the Secret's uri (-rw)
        reads_replicas = overlay in READ_REPLICA_OVERLAYS and name in READERS
        assert ("RECALLMESH_DB_PASSWORD" in spec.secret_env) is reads_replicas, name
        assert set(spec.secret_env) <= {"RECALLMESH_DSN", "RECALLMESH_INTERNAL_TOKEN",
                                        "RECALLMESH_DB_PASSWORD"}, name
        if reads_replicas:
            assert spec.secret_env["RECALLMESH_DB_PASSWORD"] == ("recallmesh-db-app", "password")
            read_dsn = dict(part.split("=", 1) for part in spec.env["RECALLMESH_READ_DSN"].split())
            assert read_dsn["host"] == "recallmesh-db-ro", name
            assert read_dsn["password"] == "$(RECALLMESH_DB_PASSWORD)", name
        else:
            assert "RECALLMESH_READ_DSN" not in spec.env, name
        pod = deployments[f"recallmesh-{name}"]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        if overlay in TLS_OVERLAYS:  # kubelet's gRPC probes cannot speak TLS
            assert container["startupProbe"]["exec"] == {"command": HEALTHCHECK}
            assert container["readinessProbe"]["exec"] == {"command": HEALTHCHECK}
            assert container["livenessProbe"]["tcpSocket"] == {"port": "grpc"}
            assert "grpc" not in container["startupProbe"]
        else:
            assert container["startupProbe"]["grpc"] == {"port": grpc_port, "service": ""}
            assert container["readinessProbe"]["grpc"] == {"port": grpc_port, "service": ""}
            assert container["livenessProbe"]["grpc"] == {
                "port": grpc_port, "service": "liveness"}
        assert set(container["resources"]["requests"]) >= {"cpu", "memory"}
        assert set(container["resources"]["limits"]) >= {"cpu", "memory"}
        svc = services[f"recallmesh-{name}"]["spec"]
        assert (svc.get("clusterIP") == "None") is (name in HEADLESS), name
        assert svc["ports"][0]["port"] == grpc_port
        if name in HEADLESS:  # dialled by the gateway / indexer with round_robin over DNS
            target = spec.env[f"RECALLMESH_{name.upper()}_TARGET"]
            assert target == f"dns:///recallmesh-{name}.{ns}.svc.cluster.local:{grpc_port}"
    migrate = specs["migrate"]
    assert migrate.kind == "Job" and migrate.command == ["recallmesh", "migrate"]
    assert migrate.secret_env == {"RECALLMESH_DSN": ("recallmesh-db-app", "uri")}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pod_security(overlay: str) -> None:
    for obj in objects(f"overlays/{overlay}"):
        if obj["kind"] not in ("Deployment", "Job"):
            continue
        pod = obj["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 10001
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for c in pod["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]


def test_migration_job_runs_between_database_and_services() -> None:
    objs = objects("overlays/production")
    job = by_kind(objs, "Job")["recallmesh-migrate"]["metadata"]["annotations"]
    assert job["argocd.argoproj.io/hook"] == "Sync"
    assert job["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    wave = int(job["argocd.argoproj.io/sync-wave"])
    for kind in ("Cluster", "Database"):
        for obj in by_kind(objs, kind).values():
            assert int(obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < wave
    for obj in by_kind(objs, "Deployment").values():
        assert int(obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) > wave


def pg_textsearch_image_tag() -> str:
    """The tag `make pg-textsearch-image` gives the extension image (the Makefile's default)."""
    found = re.search(r"^PG_TEXTSEARCH_IMAGE \?= pg-textsearch:(\S+)$",
                      (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "Makefile: no PG_TEXTSEARCH_IMAGE default"
    return found.group(1)


def test_dev_preloads_pg_textsearch_from_its_extension_image() -> None:
    """The lexical leg's BM25 index (pg_textsearch, k8s/components/pg-textsearch, in dev): the
    Cluster mounts the project's extension image (docker/pg_textsearch, CloudNativePG's default
    layout: no paths of its own), pinned by the tag the Makefile builds and named beside the
    recallmesh image; the server preloads the library (CREATE EXTENSION refuses otherwise); the
    Database declares the extension at the image's version, so the operator creates it as
    superuser."""
    objs = objects("overlays/dev")
    postgresql = by_kind(objs, "Cluster")["recallmesh-db"]["spec"]["postgresql"]
    assert postgresql["shared_preload_libraries"] == ["pg_textsearch"]
    extensions = {e["name"]: e for e in postgresql["extensions"]}
    assert set(extensions) == {"pgvector", "pg_textsearch"}
    assert set(extensions["pg_textsearch"]) == {"name", "image"}
    reference = extensions["pg_textsearch"]["image"]["reference"]
    tag = pg_textsearch_image_tag()
    registry = {c["image"].split("/recallmesh:")[0]
                for d in by_kind(objs, "Deployment").values()
                for c in d["spec"]["template"]["spec"]["containers"]}
    assert [f"{r}/pg-textsearch:{tag}" for r in registry] == [reference]
    version, major = tag.split("-")
    assert major == by_kind(objs, "Cluster")["recallmesh-db"]["spec"]["imageName"].split(
        ":")[1].split(".")[0]  # the extension's ABI is per PostgreSQL major version
    declared = {e["name"]: e for e in by_kind(objs, "Database")["recallmesh-db-app"]["spec"][
        "extensions"]}
    assert declared["pg_textsearch"].get("version") == version
    assert declared["pg_textsearch"].get("ensure", "present") == "present"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_cluster_with_standbys_loads_pg_textsearch(overlay: str) -> None:
    """pg_textsearch 1.0 broke writes on a promoted standby after a failover (decision 0018,
    known issues): a Cluster of more than one instance neither preloads it nor declares it;
    its lexical leg keeps the SQL BM25."""
    objs = objects(f"overlays/{overlay}")
    cluster = by_kind(objs, "Cluster")["recallmesh-db"]["spec"]
    declared = {e["name"] for e in by_kind(objs, "Database")["recallmesh-db-app"]["spec"][
        "extensions"]}
    loads = "pg_textsearch" in cluster["postgresql"].get("shared_preload_libraries", [])
    assert loads == ("pg_textsearch" in declared)  # both or neither
    if cluster["instances"] > 1:
        assert not loads, f"{overlay}: {cluster['instances']} instances with pg_textsearch"
    assert loads == (overlay == "dev")


def test_dev_is_small() -> None:
    objs = objects("overlays/dev")
    for d in by_kind(objs, "Deployment").values():
        assert d["spec"]["replicas"] == 1
    cluster = by_kind(objs, "Cluster")["recallmesh-db"]["spec"]
    assert cluster["instances"] == 1
    assert "plugins" not in cluster
    assert not by_kind(objs, "HorizontalPodAutoscaler") and not by_kind(objs, "ScheduledBackup")


@pytest.mark.parametrize("overlay", ["production", "production-gpu"])
def test_production_scales_and_survives_disruption(overlay: str) -> None:
    objs = objects(f"overlays/{overlay}")
    deployments = by_kind(objs, "Deployment")
    hpas = by_kind(objs, "HorizontalPodAutoscaler")
    assert set(hpas) == {f"recallmesh-{s}" for s in ("gateway", "lexical", "vector", "embedding")}
    for name, hpa in hpas.items():
        assert hpa["spec"]["scaleTargetRef"]["name"] == name
        assert hpa["spec"]["minReplicas"] <= deployments[name]["spec"]["replicas"]
    pdbs = by_kind(objs, "PodDisruptionBudget")
    assert set(pdbs) == set(deployments)
    for d in deployments.values():
        spread = d["spec"]["template"]["spec"]["topologySpreadConstraints"]
        keys = {t["topologyKey"] for t in spread}
        assert keys == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    cluster = by_kind(objs, "Cluster")["recallmesh-db"]["spec"]
    assert cluster["instances"] == 3
    assert cluster["plugins"][0]["isWALArchiver"] is True
    # synchronous replication that loses no acknowledged write (benchmarks/reports/failover.md)
    assert cluster["postgresql"]["synchronous"] == {
        "method": "any", "number": 1, "dataDurability": "required", "failoverQuorum": True}
    assert by_kind(objs, "ScheduledBackup")["recallmesh-db-nightly"]["spec"]["method"] == "plugin"
    # every DB-backed pod's pool must fit in max_connections at the HPAs' maximum
    pool = int(rendered.service_specs(overlay)["gateway"].env["RECALLMESH_DB_POOL_MAX"])
    pods = sum(
        hpas[n]["spec"]["maxReplicas"] if n in hpas else deployments[n]["spec"]["replicas"]
        for n in (f"recallmesh-{s}" for s, (_, _, db) in SERVICES.items() if db)
    )
    assert pods * (pool + 1) + 10 < int(cluster["postgresql"]["parameters"]["max_connections"])


def test_gpu_component_puts_embedding_on_a_gpu_node() -> None:
    objs = objects("overlays/production-gpu")
    pod = by_kind(objs, "Deployment")["recallmesh-embedding"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert re.search(r":[\w.]+-cuda@sha256:", c["image"])
    assert {"name": "RECALLMESH_EMBEDDING_PROVIDER", "value": "cuda"} in c["env"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    # the other services keep the CPU image
    gateway = by_kind(objs, "Deployment")["recallmesh-gateway"]["spec"]["template"]["spec"]
    assert "-cuda@" not in gateway["containers"][0]["image"]


def test_dashboard_config_map_for_the_grafana_sidecar() -> None:
    cm = by_kind(objects("overlays/dev"), "ConfigMap")["recallmesh-dashboard"]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert "recallmesh.json" in cm["data"]


def test_network_policies_default_deny_and_database_only_from_recallmesh() -> None:
    policies = by_kind(objects("overlays/dev"), "NetworkPolicy")
    deny = policies["default-deny"]["spec"]
    assert deny["podSelector"] == {} and deny["policyTypes"] == ["Ingress"]
    assert "ingress" not in deny
    egress_deny = policies["recallmesh-default-deny-egress"]["spec"]
    assert egress_deny["policyTypes"] == ["Egress"] and "egress" not in egress_deny
    db = policies["recallmesh-db"]["spec"]
    assert db["podSelector"] == {"matchLabels": {"cnpg.io/cluster": "recallmesh-db"}}
    sources = [
        f for rule in db["ingress"] for f in rule["from"] if rule["ports"][0]["port"] == 5432
    ]
    assert sources == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": "recallmesh"}}},
        {"podSelector": {"matchLabels": {"cnpg.io/cluster": "recallmesh-db"}}},
    ]
    legs = policies["recallmesh-legs-from-gateway"]["spec"]["ingress"]
    assert legs == [{
        "from": [
            {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "recallmesh-gateway"}}}
        ],
        "ports": [{"protocol": "TCP", "port": "grpc"}],
    }]


def _target_host(target: str) -> str:
    """dns:///host:port, dns:host:port or host:port -> host."""
    target = re.sub(r"^dns:(///)?", "", target)
    return target.rsplit(":", 1)[0]


@pytest.mark.parametrize("overlay", TLS_OVERLAYS)
def test_tls_every_service_mounts_its_own_certificate(overlay: str) -> None:
    objs = objects(f"overlays/{overlay}")
    deployments = by_kind(objs, "Deployment")
    certificates = by_kind(objs, "Certificate")
    by_secret = {c["spec"]["secretName"]: c for c in certificates.values()}
    specs = rendered.service_specs(overlay)
    for name in SERVICES:
        deployment = f"recallmesh-{name}"
        pod = deployments[deployment]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == TLS_DIR)
        assert mount["readOnly"] is True
        secret = volumes[mount["name"]]["secret"]["secretName"]
        assert secret == f"{deployment}-tls", name  # its own, no other service's
        cert = by_secret[secret]["spec"]
        assert cert["issuerRef"] == {"group": "cert-manager.io", "kind": "Issuer",
                                     "name": "recallmesh-ca"}
        assert {"server auth", "client auth"} <= set(cert["usages"]), name
        assert cert["privateKey"]["algorithm"] == "ECDSA"
        assert deployment in cert["dnsNames"] and "localhost" in cert["dnsNames"]
        env = specs[name].env
        assert env["RECALLMESH_TLS_CERT"] == f"{TLS_DIR}/tls.crt"
        assert env["RECALLMESH_TLS_KEY"] == f"{TLS_DIR}/tls.key"
        assert env["RECALLMESH_TLS_CA"] == f"{TLS_DIR}/ca.crt"
        assert env.get("RECALLMESH_TLS_CLIENT_AUTH", "internal") == "internal"
    # the migrate Job talks only to PostgreSQL: no certificate, no TLS settings
    assert not any(k.startswith("RECALLMESH_TLS_") for k in specs["migrate"].env)


@pytest.mark.parametrize("overlay", TLS_OVERLAYS)
def test_tls_certificates_cover_every_name_a_peer_dials(overlay: str) -> None:
    objs = objects(f"overlays/{overlay}")
    services = by_kind(objs, "Service")
    names = {c["spec"]["secretName"].removesuffix("-tls"): set(c["spec"]["dnsNames"])
             for c in by_kind(objs, "Certificate").values() if not c["spec"].get("isCA")}
    ns = NAMESPACES[overlay]
    for service in services:
        if service in names:  # every form of the Service's name
            assert {service, f"{service}.{ns}", f"{service}.{ns}.svc",
                    f"{service}.{ns}.svc.cluster.local"} <= names[service], service
    dialled = 0
    for caller, spec in rendered.service_specs(overlay).items():
        for var, target in spec.env.items():
            if not (var.startswith("RECALLMESH_") and var.endswith("_TARGET")):
                continue
            host = _target_host(target)
            service = host.split(".")[0]
            assert service in services, (caller, var, target)
            assert host in names[service], (caller, var, host)
            dialled += 1
    assert dialled >= 5  # the legs, embedding and fusion at least


@pytest.mark.parametrize("overlay", TLS_OVERLAYS)
def test_tls_ca_bootstrapped_with_cert_manager(overlay: str) -> None:
    objs = objects(f"overlays/{overlay}")
    issuers = by_kind(objs, "Issuer")
    assert issuers["recallmesh-selfsigned"]["spec"] == {"selfSigned": {}}
    (ca,) = [c["spec"] for c in by_kind(objs, "Certificate").values() if c["spec"].get("isCA")]
    assert ca["issuerRef"]["name"] == "recallmesh-selfsigned"
    assert issuers["recallmesh-ca"]["spec"] == {"ca": {"secretName": ca["secretName"]}}
    for cert in by_kind(objs, "Certificate").values():
        spec = cert["spec"]
        # renewed well before expiry (durations in hours, as cert-manager writes them)
        duration, renew = (int(spec[k].removesuffix("h")) for k in ("duration", "renewBefore"))
        assert 0 < renew < duration, cert["metadata"]["name"]
        # the CA first, then the certificates, then (wave >= 1) the services
        assert int(cert["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < 1


def test_dev_stays_plaintext() -> None:
    objs = objects("overlays/dev")
    assert not by_kind(objs, "Certificate") and not by_kind(objs, "Issuer")
    for name, spec in rendered.service_specs("dev").items():
        assert not any(k.startswith("RECALLMESH_TLS_") for k in spec.env), name


def test_kubectl_reports_itself() -> None:
    # the pinned toolchain is what it claims to be (kustomize v5 in kubectl)
    import subprocess

    out = subprocess.run([tool("kubectl"), "version", "--client"], capture_output=True, text=True)
    assert "Kustomize Version: v5" in out.stdout, out.stdout


# --------------------------------------------------------------------------- authentication


def test_no_overlay_turns_authentication_off() -> None:
    """RECALLMESH_AUTH=required in the base's settings, and nothing under k8s/ or terraform/
    sets it to anything else (`off` is for local development only)."""
    setting = re.compile(r"RECALLMESH_AUTH\b\W+(\w+)")
    for path in [*K8S.rglob("*.yaml"), *(ROOT / "terraform").rglob("*.tf")]:
        for value in setting.findall(path.read_text()):
            assert value == "required", f"{path}: RECALLMESH_AUTH {value}"
    for overlay in OVERLAYS:
        for name, spec in rendered.service_specs(overlay).items():
            # no off switch: the MCP server's and the HTTP API's requests need a bearer the
            # gateway accepts, the console's a signed-in key
            if name in GATEWAY_CLIENTS:
                continue
            assert spec.env.get("RECALLMESH_AUTH") == "required", (overlay, name)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_internal_service_has_a_wall(overlay: str) -> None:
    """What each service would decide at start (recallmesh.auth.interceptors.internal_guard,
    the very code `recallmesh serve` runs) from its rendered settings: the gateway is public;
    every other service accepts internal callers only, by mutual TLS in the TLS overlays and by
    the internal token otherwise. A service without either refuses to start (ConfigError)."""
    from recallmesh.auth.interceptors import InternalOnly, internal_guard
    from recallmesh.shared.settings import AuthSettings
    from recallmesh.shared.tls import TlsSettings

    placeholder = "x" * 44  # stands for the Secret's value: `openssl rand -base64 32`
    for name, spec in rendered.service_specs(overlay).items():
        if name in ("migrate", *GATEWAY_CLIENTS):  # a one-shot; clients of the gateway
            assert "RECALLMESH_INTERNAL_TOKEN" not in spec.secret_env
            continue
        env = dict(spec.env)
        env.update({var: placeholder for var, ref in spec.secret_env.items()
                    if ref == INTERNAL_TOKEN})
        auth = AuthSettings.from_env(env)

        def path(var: str, env: dict[str, Any] = env) -> Path | None:
            return Path(env[var]) if env.get(var) else None

        tls = TlsSettings(path("RECALLMESH_TLS_CERT"), path("RECALLMESH_TLS_KEY"),
                          path("RECALLMESH_TLS_CA"), env.get("RECALLMESH_TLS_CLIENT_AUTH",
                                                             "internal"))
        guard = internal_guard(name, auth, tls)  # raises when the service would not start
        if name == "gateway":
            assert guard is None
        elif overlay in TLS_OVERLAYS:
            assert guard is None and tls.ca is not None and tls.requires_client_cert(name), name
        else:
            assert isinstance(guard, InternalOnly), name
        if overlay in TOKEN_OVERLAYS:  # every caller sends it too: the gateway, the indexer
            assert spec.secret_env["RECALLMESH_INTERNAL_TOKEN"] == INTERNAL_TOKEN, name
        else:  # mutual TLS is the wall: no Secret to create, none referenced
            assert "RECALLMESH_INTERNAL_TOKEN" not in spec.secret_env, name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_internal_token_is_never_committed(overlay: str) -> None:
    """The token comes from a Secret the operator creates (docs/operations/kubernetes.md); no
    overlay renders a Secret, a ConfigMap value or a literal for it, and a missing Secret keeps
    the pod from starting (optional: false) instead of starting it without its wall."""
    objs = objects(f"overlays/{overlay}")
    assert not by_kind(objs, "Secret")
    for cm in by_kind(objs, "ConfigMap").values():
        assert "RECALLMESH_INTERNAL_TOKEN" not in (cm.get("data") or {})
    for obj in by_kind(objs, "Deployment").values():
        for c in obj["spec"]["template"]["spec"]["containers"]:
            for var in c.get("env") or []:
                if var["name"] != "RECALLMESH_INTERNAL_TOKEN":
                    continue
                assert "value" not in var
                assert var["valueFrom"]["secretKeyRef"] == {
                    "name": INTERNAL_TOKEN[0], "key": INTERNAL_TOKEN[1], "optional": False}


def test_kubernetes_md_says_how_to_create_the_internal_token() -> None:
    text = KUBERNETES_MD.read_text()
    assert (f"kubectl -n recallmesh-dev create secret generic {INTERNAL_TOKEN[0]}"
            in text)
    assert f"--from-literal={INTERNAL_TOKEN[1]}=" in text
    assert "recallmesh keys create --database" in text


def test_mcp_component_serves_http_with_probes_and_no_secrets() -> None:
    objs = objects("overlays/dev")
    spec = rendered.service_specs("dev")["mcp"]
    assert spec.command == ["recallmesh", "mcp", "--transport", "http"]
    assert spec.ports == {"http": 8765}
    assert spec.secret_env == {}  # no credential: each request carries the agent's own
    assert spec.env["RECALLMESH_MCP_HOST"] == "0.0.0.0"
    assert spec.env["RECALLMESH_MCP_PORT"] == "8765"
    assert spec.env["RECALLMESH_MCP_NAMESPACE"]
    assert _target_host(spec.env["RECALLMESH_TARGET"]) in by_kind(objs, "Service")
    pod = by_kind(objs, "Deployment")["recallmesh-mcp"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    policy = by_kind(objs, "NetworkPolicy")["recallmesh-mcp"]["spec"]
    assert policy["egress"] == [{
        "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "recallmesh-gateway"}}}],
        "ports": [{"protocol": "TCP", "port": 50051}],
    }]
    assert policy["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 8765}]


def test_console_component_in_dev_only_hardened_and_scraped() -> None:
    """k8s/components/console: in dev, absent from the production overlays (opt-in there); HTTP
    with health and readiness probes, its metrics port scraped like every service's, no
    secrets, one replica (sessions are in memory), egress to the gateway only."""
    for overlay in ("production", "production-gpu"):
        objs = objects(f"overlays/{overlay}")
        assert not [o for o in objs if "console" in o["metadata"]["name"]], overlay
        assert "console" not in rendered.service_specs(overlay)
    objs = objects("overlays/dev")
    spec = rendered.service_specs("dev")["console"]
    assert spec.command == ["recallmesh", "console"]
    assert spec.ports == {"http": 8080, "metrics": 9458}
    assert spec.secret_env == {}  # no credential: a user signs in with an API key
    assert spec.env["RECALLMESH_CONSOLE_HOST"] == "0.0.0.0"
    assert spec.env["RECALLMESH_CONSOLE_PORT"] == "8080"
    assert spec.env["RECALLMESH_CONSOLE_METRICS_PORT"] == "9458"
    assert spec.env["RECALLMESH_LOG_FORMAT"] == "json"
    assert spec.env["RECALLMESH_TARGET"] == "recallmesh-gateway:50051"
    assert _target_host(spec.env["RECALLMESH_TARGET"]) in by_kind(objs, "Service")
    deployment = by_kind(objs, "Deployment")["recallmesh-console"]
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert set(container["resources"]["requests"]) >= {"cpu", "memory"}
    assert set(container["resources"]["limits"]) >= {"cpu", "memory"}
    # hardened exactly like the MCP server's pod (test_pod_security checks the fields)
    mcp = by_kind(objs, "Deployment")["recallmesh-mcp"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == mcp["securityContext"]
    assert container["securityContext"] == mcp["containers"][0]["securityContext"]
    assert container["volumeMounts"] == mcp["containers"][0]["volumeMounts"]
    service = by_kind(objs, "Service")["recallmesh-console"]["spec"]
    assert service["selector"] == {"app.kubernetes.io/name": "recallmesh-console"}
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(8080, "http")]
    policies = by_kind(objs, "NetworkPolicy")
    policy = policies["recallmesh-console"]["spec"]
    assert policy["podSelector"] == {
        "matchLabels": {"app.kubernetes.io/name": "recallmesh-console"}}
    assert policy["egress"] == [{
        "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "recallmesh-gateway"}}}],
        "ports": [{"protocol": "TCP", "port": 50051}],
    }]
    assert [rule["ports"] for rule in policy["ingress"]] == [[{"protocol": "TCP", "port": 8080}]]
    # scraped like every service: the PodMonitor and the scrape policy select the port named
    # `metrics` of every pod labelled part-of recallmesh; `service` comes from the component
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    (monitor,) = by_kind(objs, "PodMonitor")["recallmesh"]["spec"]["podMetricsEndpoints"]
    assert monitor["port"] == "metrics" and monitor["path"] == "/metrics"
    selector = by_kind(objs, "PodMonitor")["recallmesh"]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    scrape = policies["recallmesh-allow-metrics-scrape"]["spec"]
    assert scrape["podSelector"]["matchLabels"].items() <= labels.items()
    assert scrape["ingress"][0]["ports"] == [{"protocol": "TCP", "port": "metrics"}]
    assert labels["app.kubernetes.io/component"] == "console"


def test_http_component_in_dev_only_hardened_and_scraped() -> None:
    """k8s/components/http (the HTTP/JSON API): in dev, absent from the production overlays
    (opt-in there); health and readiness probes, its metrics port scraped like every
    service's, no secrets, one replica in dev (stateless: any number serves), egress to the
    gateway only, hardened like the console's pod."""
    for overlay in ("production", "production-gpu"):
        objs = objects(f"overlays/{overlay}")
        assert not [o for o in objs if o["metadata"]["name"] == "recallmesh-http"], overlay
        assert "http" not in rendered.service_specs(overlay)
    objs = objects("overlays/dev")
    spec = rendered.service_specs("dev")["http"]
    assert spec.command == ["recallmesh", "http"]
    assert spec.ports == {"http": 8081, "metrics": 9459}
    assert spec.secret_env == {}  # no credential: each request carries its bearer token
    assert spec.env["RECALLMESH_HTTP_HOST"] == "0.0.0.0"
    assert spec.env["RECALLMESH_HTTP_PORT"] == "8081"
    assert spec.env["RECALLMESH_HTTP_METRICS_PORT"] == "9459"
    assert spec.env["RECALLMESH_TARGET"] == "recallmesh-gateway:50051"
    assert _target_host(spec.env["RECALLMESH_TARGET"]) in by_kind(objs, "Service")
    deployments = by_kind(objs, "Deployment")
    deployment = deployments["recallmesh-http"]
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    console = deployments["recallmesh-console"]["spec"]["template"]["spec"]
    assert pod["securityContext"] == console["securityContext"]
    assert container["securityContext"] == console["containers"][0]["securityContext"]
    service = by_kind(objs, "Service")["recallmesh-http"]["spec"]
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(8081, "http")]
    policy = by_kind(objs, "NetworkPolicy")["recallmesh-http"]["spec"]
    assert policy["egress"] == [{
        "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "recallmesh-gateway"}}}],
        "ports": [{"protocol": "TCP", "port": 50051}],
    }]
    assert [rule["ports"] for rule in policy["ingress"]] == [[{"protocol": "TCP", "port": 8081}]]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/component"] == "http"
    assert labels["app.kubernetes.io/part-of"] == "recallmesh"
