"""The rendered kustomize overlays, as objects, and what each service container runs.

Standalone (no recallmesh import), so the image test can read from the dev overlay what to
start instead of writing it a second time:

    from tests.deploy.rendered import service_specs
    for name, spec in service_specs("dev").items():
        spec.command      # ["recallmesh", "serve", "gateway"] (command + args)
        spec.env          # {"RECALLMESH_GATEWAY_HOST": "0.0.0.0", ...} ConfigMap values resolved
        spec.secret_env   # {"RECALLMESH_DSN": ("recallmesh-db-app", "uri"),
                          #  "RECALLMESH_INTERNAL_TOKEN": ("recallmesh-internal-token", "token")}:
                          # fill in yourself
        spec.ports        # {"grpc": 50051, "metrics": 9451}

`service_specs` also returns the migrate Job as "migrate". Needs `kubectl` on PATH.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"


@functools.cache
def render_text(target: str = "overlays/dev") -> str:
    """`kubectl kustomize k8s/<target>` (target: "base", "overlays/dev", ...)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise RuntimeError("kubectl not found: `make deploy-tools` (apt-get install -y kubectl)")
    done = subprocess.run(
        [kubectl, "kustomize", str(K8S / target)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize k8s/{target} failed:\n{done.stderr}")
    return done.stdout


def render(target: str = "overlays/dev") -> list[dict[str, Any]]:
    """Every object the target renders (fresh copies: callers may modify them)."""
    return [doc for doc in yaml.safe_load_all(render_text(target)) if doc]


@dataclass
class ServiceSpec:
    name: str
    kind: str
    image: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, tuple[str, str]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)


def _config_maps(objects: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {
        o["metadata"]["name"]: dict(o.get("data") or {})
        for o in objects
        if o["kind"] == "ConfigMap"
    }


def _spec(name: str, kind: str, container: dict[str, Any],
          config_maps: dict[str, Any]) -> ServiceSpec:
    env: dict[str, str] = {}
    secret_env: dict[str, tuple[str, str]] = {}
    for source in container.get("envFrom") or []:
        if "configMapRef" in source:
            env.update(config_maps[source["configMapRef"]["name"]])
    for var in container.get("env") or []:
        if "value" in var:
            env[var["name"]] = str(var["value"])
            continue
        ref = var.get("valueFrom") or {}
        if "secretKeyRef" in ref:
            secret_env[var["name"]] = (ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"])
        elif "configMapKeyRef" in ref:
            cm = ref["configMapKeyRef"]
            env[var["name"]] = config_maps[cm["name"]][cm["key"]]
        else:
            raise ValueError(f"{name}: env {var['name']} has a source this helper does not read")
    return ServiceSpec(
        name=name,
        kind=kind,
        image=container["image"],
        command=list(container.get("command") or []) + list(container.get("args") or []),
        env=env,
        secret_env=secret_env,
        ports={p["name"]: int(p["containerPort"]) for p in container.get("ports") or []},
    )


def service_specs(overlay: str = "dev") -> dict[str, ServiceSpec]:
    """Per recallmesh service (gateway, lexical, ..., and "migrate"): what its container runs."""
    objects = render(f"overlays/{overlay}")
    config_maps = _config_maps(objects)
    specs: dict[str, ServiceSpec] = {}
    for obj in objects:
        if obj["kind"] not in ("Deployment", "Job"):
            continue
        labels = obj["metadata"].get("labels") or {}
        if labels.get("app.kubernetes.io/part-of") != "recallmesh":
            continue
        name = labels["app.kubernetes.io/component"]
        (container,) = obj["spec"]["template"]["spec"]["containers"]
        specs[name] = _spec(name, obj["kind"], container, config_maps)
    return specs


if __name__ == "__main__":  # python -m tests.deploy.rendered [overlay]
    import json
    import sys

    out = {k: vars(v) for k, v in service_specs(*(sys.argv[1:2] or ["dev"])).items()}
    json.dump(out, sys.stdout, indent=2)
    print()
