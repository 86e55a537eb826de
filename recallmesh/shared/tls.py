"""TLS on every hop, written once: how a server listens and how a channel dials.

Off unless configured (local development: `recallmesh up` on one host). Configured by files,
the same variables in every process (a Kubernetes pod mounts its cert-manager Secret there):

  RECALLMESH_TLS_CERT, RECALLMESH_TLS_KEY   this process's certificate chain and private key
                                            (PEM). Set both, or neither. With them every server
                                            serves TLS, and every internal channel presents them
                                            as its client certificate (mutual TLS).
  RECALLMESH_TLS_CA                         the CA bundle (PEM) that verifies peers: the servers a
                                            channel dials, and the client certificates a server
                                            requires.
  RECALLMESH_TLS_CLIENT_AUTH                `internal` (default): every service but the gateway
                                            requires a client certificate signed by the CA (only
                                            the gateway and the indexer can call a leg, the
                                            embedding or the fusion service); `all`: the gateway
                                            requires one too; `none`: no service does.
  RECALLMESH_TLS_SERVER_NAME                the name a channel checks the server's certificate
                                            for, when it is not the target's host (e.g. dialling
                                            an address).

Servers reload their certificate, key and CA when the files change (checked at each new
handshake, by modification time), so a rotated Secret needs no restart. A channel reads them
when it is made; internal channels are long-lived, so a client certificate rotated before its
expiry (cert-manager renews at two thirds of the lifetime) takes effect with the next restart.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc

from recallmesh.shared.settings import ConfigError, env_str

log = logging.getLogger(__name__)

CLIENT_AUTH = ("internal", "all", "none")
PUBLIC_SERVICE = "gateway"  # the one service external clients call


@dataclass(frozen=True)
class TlsSettings:
    cert: Path | None = None
    key: Path | None = None
    ca: Path | None = None
    client_auth: str = "internal"
    server_name: str = ""

    @property
    def enabled(self) -> bool:
        return self.cert is not None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TlsSettings:
        def path(name: str) -> Path | None:
            raw = env_str(name, "", environ).strip()
            if not raw:
                return None
            found = Path(raw).expanduser()
            if not found.is_file():
                raise ConfigError(f"{name}: no such file {found}")
            return found

        cert, key, ca = (path("RECALLMESH_TLS_CERT"), path("RECALLMESH_TLS_KEY"),
                         path("RECALLMESH_TLS_CA"))
        if (cert is None) != (key is None):
            raise ConfigError("RECALLMESH_TLS_CERT and RECALLMESH_TLS_KEY go together: set both "
                              "(TLS) or neither (plaintext)")
        client_auth = env_str("RECALLMESH_TLS_CLIENT_AUTH", "internal", environ).strip().lower()
        if client_auth not in CLIENT_AUTH:
            raise ConfigError(f"RECALLMESH_TLS_CLIENT_AUTH must be one of "
                              f"{', '.join(CLIENT_AUTH)}, got {client_auth!r}")
        if cert is not None and ca is None and client_auth != "none":
            raise ConfigError("mutual TLS needs RECALLMESH_TLS_CA (the CA that signs the "
                              "services' certificates), or RECALLMESH_TLS_CLIENT_AUTH=none")
        return cls(cert, key, ca, client_auth,
                   env_str("RECALLMESH_TLS_SERVER_NAME", "", environ).strip())

    def requires_client_cert(self, service: str) -> bool:
        if self.client_auth == "none":
            return False
        return self.client_auth == "all" or service != PUBLIC_SERVICE


class _Reloading:
    """The server's certificate configuration, read again when a file's mtime changes."""

    def __init__(self, settings: TlsSettings) -> None:
        self.settings = settings
        self.stamp: tuple[float, ...] = ()

    def _files(self) -> list[Path]:
        return [p for p in (self.settings.cert, self.settings.key, self.settings.ca) if p]

    def current(self) -> grpc.ServerCertificateConfiguration:
        self.stamp = tuple(p.stat().st_mtime_ns for p in self._files())
        s = self.settings
        assert s.cert is not None and s.key is not None
        return grpc.ssl_server_certificate_configuration(
            [(s.key.read_bytes(), s.cert.read_bytes())],
            root_certificates=s.ca.read_bytes() if s.ca else None)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called by gRPC at each new handshake: a new configuration when a file changed."""
        try:
            stamp = tuple(p.stat().st_mtime_ns for p in self._files())
            if stamp == self.stamp:
                return None
            config = self.current()
        except (OSError, ValueError) as exc:  # mid-rotation: keep serving the last good one
            log.warning("TLS files not reloaded: %s", exc)
            return None
        log.info("TLS certificate reloaded")
        return config


def server_credentials(settings: TlsSettings, service: str) -> grpc.ServerCredentials:
    reloading = _Reloading(settings)
    return grpc.dynamic_ssl_server_credentials(
        reloading.current(), reloading.fetch,
        require_client_authentication=settings.requires_client_cert(service))


def channel_credentials(settings: TlsSettings) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=settings.ca.read_bytes() if settings.ca else None,
        private_key=settings.key.read_bytes() if settings.key else None,
        certificate_chain=settings.cert.read_bytes() if settings.cert else None)
