"""What the blocking and the asyncio client share: settings, the namespace rule, the
credential (they dial with recallmesh/wire/channel.py)."""

from __future__ import annotations

from recallmesh.shared.credentials import client_api_key
from recallmesh.shared.settings import env_str
from recallmesh.shared.tls import TlsSettings
from recallmesh.wire.channel import DEFAULT_TARGET, RetryPolicy, gateway_options
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS

DEFAULT_TIMEOUT_S = 10.0

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
        self._tls = tls
        self._options = gateway_options(retry or RetryPolicy())

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r}, namespace={self.namespace!r})"


def bearer_token(api_key: str | None, token: str | None) -> str:
    """The credential every call carries: `token` (a JWT) or `api_key` when given, else
    RECALLMESH_API_KEY, else the local key `recallmesh up` wrote (docs/client.md)."""
    if api_key and token:
        raise ValueError("give api_key or token, not both")
    if api_key or token:
        return str(api_key or token)
    return client_api_key()
