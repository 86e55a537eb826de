"""TLS settings from the environment (recallmesh.shared.tls): off unless a certificate is
given, clear errors for half a configuration, and which services require client certificates."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallmesh.shared.settings import ConfigError
from recallmesh.shared.tls import TlsSettings


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name in ("cert.pem", "key.pem", "ca.pem"):
        (tmp_path / name).write_text("-----BEGIN PLACEHOLDER-----\n")
    return tmp_path


def test_off_by_default() -> None:
    settings = TlsSettings.from_env({})
    assert not settings.enabled and settings.ca is None


def test_mutual_tls_for_internal_services_only_by_default(files: Path) -> None:
    settings = TlsSettings.from_env({"RECALLMESH_TLS_CERT": str(files / "cert.pem"),
                                     "RECALLMESH_TLS_KEY": str(files / "key.pem"),
                                     "RECALLMESH_TLS_CA": str(files / "ca.pem")})
    assert settings.enabled
    assert not settings.requires_client_cert("gateway")
    assert all(settings.requires_client_cert(s)
               for s in ("lexical", "vector", "graph", "embedding", "fusion", "indexer"))
    every = TlsSettings.from_env({"RECALLMESH_TLS_CERT": str(files / "cert.pem"),
                                  "RECALLMESH_TLS_KEY": str(files / "key.pem"),
                                  "RECALLMESH_TLS_CA": str(files / "ca.pem"),
                                  "RECALLMESH_TLS_CLIENT_AUTH": "all"})
    assert every.requires_client_cert("gateway")


@pytest.mark.parametrize("env, message", [
    ({"RECALLMESH_TLS_CERT": "cert.pem"}, "go together"),
    ({"RECALLMESH_TLS_KEY": "key.pem"}, "go together"),
    ({"RECALLMESH_TLS_CERT": "missing.pem", "RECALLMESH_TLS_KEY": "key.pem"}, "no such file"),
    ({"RECALLMESH_TLS_CERT": "cert.pem", "RECALLMESH_TLS_KEY": "key.pem"},
     "mutual TLS needs RECALLMESH_TLS_CA"),
    ({"RECALLMESH_TLS_CLIENT_AUTH": "sometimes"}, "must be one of internal, all, none"),
])
def test_half_a_configuration_is_a_clear_error(files: Path, env: dict[str, str],
                                               message: str) -> None:
    env = {k: str(files / v) if v.endswith(".pem") else v for k, v in env.items()}
    with pytest.raises(ConfigError, match=message):
        TlsSettings.from_env(env)
