"""terraform/: every file parses as HCL (python-hcl2; there is no terraform binary here),
providers and charts are pinned to exact versions, variables are typed and described.
checkov scans it in test_static_tools (it has no policies for helm_release,
kubernetes_namespace_v1 or kubernetes_manifest, so that scan checks nothing there)."""

from __future__ import annotations

import re
from typing import Any

import hcl2
import pytest

from tests.deploy.tools import SCHEMAS, TERRAFORM

EXACT = re.compile(r"^\d+\.\d+\.\d+$")
# chart versions: exact too; Jetstack publishes cert-manager's with a leading v (v1.21.1)
EXACT_CHART = re.compile(r"^v?\d+\.\d+\.\d+$")


def _plain(value: Any) -> Any:
    """python-hcl2's output made plain: one-element lists unwrapped, position and block
    markers (`__start_line__`, `__is_block__`) dropped, and the double quotes python-hcl2 8
    keeps around string values and block labels removed. Use `_many` where a block kind may
    repeat."""
    if isinstance(value, dict):
        return {_unquote(k): _plain(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        if len(value) == 1:
            return _plain(value[0])
        return [_plain(v) for v in value]
    return _unquote(value) if isinstance(value, str) else value


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def parsed() -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(TERRAFORM.rglob("*.tf")):
        with path.open() as f:
            out[str(path.relative_to(TERRAFORM))] = _plain(hcl2.load(f))
    return out


def _many(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def blocks(kind: str) -> list[dict[str, Any]]:
    return [b for doc in parsed().values() for b in _many(doc.get(kind, []))]


def test_hcl_parses() -> None:
    files = parsed()
    assert set(files) >= {"main.tf", "variables.tf", "outputs.tf", "versions.tf",
                          "examples/cluster/main.tf"}


def test_providers_pinned_exactly() -> None:
    terraform_blocks = blocks("terraform")
    assert len(terraform_blocks) == 2  # the module and the example root
    for block in terraform_blocks:
        providers = block["required_providers"]
        assert set(providers) == {"helm", "kubernetes"}
        for name, spec in providers.items():
            assert spec["source"] == f"hashicorp/{name}"
            assert EXACT.match(spec["version"]), (name, spec["version"])


def test_helm_releases_pinned() -> None:
    variables = {k: v for b in blocks("variable") for k, v in b.items()}
    releases = {k: v for b in blocks("resource") for k, v in b.get("helm_release", {}).items()}
    assert {r["chart"] for r in releases.values()} == {
        "cert-manager", "cloudnative-pg", "plugin-barman-cloud", "kube-prometheus-stack"}
    for name, release in releases.items():
        ref = re.fullmatch(r"(?:\$\{)?var\.(\w+)\}?", release["version"])
        assert ref, f"{name}: version must come from a variable"
        assert EXACT_CHART.match(variables[ref.group(1)]["default"]), name


def test_cert_manager_matches_the_vendored_crds() -> None:
    """The chart's release is the one whose Certificate / Issuer CRDs tests/deploy/schemas/
    holds."""
    variables = {k: v for b in blocks("variable") for k, v in b.items()}
    version = variables["cert_manager_chart_version"]["default"]
    readme = (SCHEMAS / "README.md").read_text()
    assert f"| cert-manager/cert-manager (`deploy/crds/`) | {version} |" in readme


def test_variables_typed_and_described() -> None:
    module_vars = _many(parsed()["variables.tf"]["variable"])
    names = {k for v in module_vars for k in v}
    assert {"overlay", "image", "storage_class", "namespace"} <= names
    for var in module_vars:
        for name, spec in var.items():
            assert spec.get("type") and spec.get("description"), name


def test_registers_the_argocd_application() -> None:
    (app,) = [m for r in _many(parsed()["main.tf"]["resource"])
              for m in r.get("kubernetes_manifest", {}).values()]
    assert app["manifest"]["kind"] == "Application"
    assert app["manifest"]["spec"]["source"]["path"] == "k8s/overlays/${var.overlay}"


@pytest.mark.parametrize("kind", ["output"])
def test_outputs_described(kind: str) -> None:
    for block in _many(parsed()["outputs.tf"][kind]):
        for name, spec in block.items():
            assert spec.get("description"), name
