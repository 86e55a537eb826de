"""Every rendered object validates against its schema: core kinds with kubernetes-validate
(Kubernetes 1.33.0, strict), custom resources against the vendored CRDs' openAPIV3Schema."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.deploy import rendered
from tests.deploy.tools import K8S, KUBERNETES_VERSION, OVERLAYS, SCHEMAS, tool


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every vendored CRD version."""
    out = {}
    for path in sorted(SCHEMAS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def _no_additional(schema: dict[str, Any]) -> dict[str, Any]:
    """The structural schema made strict: unknown fields are errors, as the API server prunes
    (and Argo CD then reports drift). x-kubernetes-preserve-unknown-fields keeps them open."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {k: _no_additional(v) if isinstance(v, dict) else
           [_no_additional(i) for i in v] if isinstance(v, list) else v
           for k, v in schema.items()}
    if isinstance(out.get("pattern"), str) and out["pattern"].startswith("^(?i)"):
        # Go's RE2 takes a flag group after ^; Python wants global flags first
        out["pattern"] = "(?i)^" + out["pattern"][len("^(?i)"):]
    if "properties" in schema and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if "properties" in out:
        out["properties"] = {k: _no_additional(v) for k, v in schema["properties"].items()}
    return out


def validate_object(obj: dict[str, Any]) -> str:
    """Validate one object; returns which schema did it ("core" or "crd")."""
    key = (obj["apiVersion"], obj["kind"])
    schemas = crd_schemas()
    if key in schemas:
        schema = _no_additional(schemas[key])
        # metadata is validated by the API server, not by the CRD schema
        body = {k: v for k, v in obj.items() if k != "metadata"}
        schema = {**schema,
                  "properties": {k: v for k, v in schema["properties"].items() if k != "metadata"},
                  "required": [r for r in schema.get("required", []) if r != "metadata"]}
        jsonschema.Draft7Validator(schema).validate(body)
        return "crd"
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    return "core"


def _targets() -> list[str]:
    return ["base"] + [f"overlays/{o}" for o in OVERLAYS]


@pytest.mark.parametrize("target", _targets())
def test_rendered_objects_validate(target: str,
                                   record_property: Callable[[str, object], None]) -> None:
    tool("kubectl")
    counts: Counter[str] = Counter()
    errors = []
    for obj in rendered.render(target):
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            counts[validate_object(obj)] += 1
        except (jsonschema.ValidationError, kubernetes_validate.ValidationError) as exc:
            errors.append(f"{name}: {getattr(exc, 'message', exc)}")
        except kubernetes_validate.SchemaNotFoundError:
            errors.append(f"{name}: no schema for {obj['apiVersion']} {obj['kind']} "
                          "(vendor its CRD into deploy/schemas)")
    assert not errors, "\n".join(errors)
    print(f"k8s/{target}: {counts['core']} core + {counts['crd']} custom resources valid")
    record_property("validated", dict(counts))
    assert counts["core"] and counts["crd"]


def test_argocd_applications_validate() -> None:
    apps = sorted((K8S / "argocd").glob("*.yaml"))
    assert [p.stem for p in apps] == ["recallmesh-dev", "recallmesh-production"]
    for path in apps:
        app = yaml.safe_load(path.read_text())
        assert validate_object(app) == "crd"
        overlay = app["spec"]["source"]["path"]
        assert (K8S.parent / overlay / "kustomization.yaml").exists(), overlay


def test_schema_validation_catches_mistakes() -> None:
    """The validators are not vacuous: a misspelt field fails in a CRD and in a core kind."""
    cluster = next(o for o in rendered.render("overlays/dev") if o["kind"] == "Cluster")
    cluster["spec"]["instanses"] = 3
    with pytest.raises(jsonschema.ValidationError):
        validate_object(cluster)
    deployment = next(o for o in rendered.render("overlays/dev") if o["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_object(deployment)
