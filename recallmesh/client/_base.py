"""What the blocking and the asyncio client share: settings, the namespace rule, dialling."""

from __future__ import annotations

from typing import Any

from recallmesh.client._channel import (
    DEFAULT_TARGET,
    DEFAULT_TIMEOUT_S,
    RetryPolicy,
    bearer_token,
    channel_options,
    credentials,
)
from recallmesh.shared.settings import env_str
from recallmesh.shared.tls import TlsSettings
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS

# a write that waits for indexing gets this much longer than its wait: the answer's way back
INDEX_WAIT_MARGIN_S = 5.0


class ClientBase:
    def __init__(self, target: str | None = None, *, namespace: str | None = None,
                 api_key: str | None = None, token: str | None = None,
                 tls: bool | TlsSettings | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 retry: RetryPolicy | None = None) -> None:
        self.target = target or env_str("RECALLMESH_TARGET", DEFAULT_TARGET)
        self.namespace = namespace
        self.timeout = timeout
        self._token = bearer_token(api_key, token)
        self._credentials, extra = credentials(tls)
        self._options = [*channel_options(retry or RetryPolicy()), *extra]

    def _ns(self, namespace: str | None) -> str:
        ns = namespace or self.namespace
        if not ns:
            raise ValueError("no namespace: give namespace= to the client or to the call")
        return ns

    def _timeout(self, timeout: float | None, wait_indexed: bool | float = False) -> float:
        """The call's deadline: `timeout` when given; for a write that waits for indexing, long
        enough for the wait (the server answers when its wait ends, at the latest);
        else the client's default."""
        if timeout is not None:
            return timeout
        if wait_indexed is False:
            return self.timeout
        wait_s = MAX_INDEX_WAIT_MS / 1000 if wait_indexed is True else float(wait_indexed)
        return max(self.timeout, wait_s + INDEX_WAIT_MARGIN_S)

    def _dial(self, grpc_module: Any, interceptors: list[Any] | None = None) -> Any:
        """A channel of `grpc_module` (grpc, or grpc.aio with its interceptors) to the target."""
        extra = {"interceptors": interceptors} if interceptors else {}
        if self._credentials is not None:
            return grpc_module.secure_channel(self.target, self._credentials,
                                              options=self._options, **extra)
        return grpc_module.insecure_channel(self.target, options=self._options, **extra)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r}, namespace={self.namespace!r})"
