"""Deploy checks: static validation of k8s/, terraform/ and the observability files.

Every test here is marked `deploy`; `make deploy-check` runs just these, `make test` runs them
with the rest of the suite. Tools they need (kubectl, promtool, checkov) are installed by
`make deploy-tools`; a missing one fails the test with the hint."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "deploy: static checks of the Kubernetes, Terraform and observability files"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/deploy/" in item.nodeid:
            item.add_marker(pytest.mark.deploy)
