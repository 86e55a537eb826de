"""Domain errors raised by the plain-Python cores.

The cores never import grpc. The server bootstrap's interceptor maps these to
gRPC status codes; anything else that escapes a handler becomes INTERNAL with
an opaque reference (the traceback goes to the log, never to the caller).
Failures of the database are not bugs: recallmesh.shared.db.domain_error reads them as
UNAVAILABLE (retry), RESOURCE_EXHAUSTED for a pool with too many callers waiting, and
INVALID_ARGUMENT for a value the database refuses (a data exception).
"""

from __future__ import annotations

# The trailing-metadata key of a shed call's retry hint (milliseconds to wait): sent by the
# servers' admission (recallmesh/shared/telemetry.py), read by the client's retries.
PUSHBACK_KEY = "grpc-retry-pushback-ms"


class RequestError(Exception):
    """An error the caller can act on. `code` is a grpc.StatusCode name."""

    code = "UNKNOWN"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(RequestError):
    code = "INVALID_ARGUMENT"


class NotFound(RequestError):
    code = "NOT_FOUND"


class Unavailable(RequestError):
    code = "UNAVAILABLE"


class DeadlineExceeded(RequestError):
    """The caller's deadline passed before the work was done (nothing was done for it)."""

    code = "DEADLINE_EXCEEDED"


class ResourceExhausted(RequestError):
    """Refused for load, at once, before doing the work: the caller may retry after a pause
    (the server sends a `grpc-retry-pushback-ms` hint with it). `reason` names what was full
    (the recallmesh_shed_total label): `concurrency` (the server's limit of RPCs in
    progress), `db_pool` (callers waiting for a database connection), `embedding_queue` and
    `embedding_deadline` (the embedding lanes), `late` (a recall that arrived with too little of
    its deadline left)."""

    code = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class AlreadyExists(RequestError):
    code = "ALREADY_EXISTS"


class Unauthenticated(RequestError):
    """No credential, or one that does not verify (unknown, revoked, expired, bad signature)."""

    code = "UNAUTHENTICATED"


class PermissionDenied(RequestError):
    """A verified caller asked for a namespace or a scope it is not granted."""

    code = "PERMISSION_DENIED"
