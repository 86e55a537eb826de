"""Domain errors raised by the plain-Python cores.

The cores never import grpc. The server bootstrap's interceptor maps these to
gRPC status codes; anything else that escapes a handler becomes INTERNAL with
an opaque reference (the traceback goes to the log, never to the caller).
"""

from __future__ import annotations


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


class AlreadyExists(RequestError):
    code = "ALREADY_EXISTS"


class Unauthenticated(RequestError):
    """No credential, or one that does not verify (unknown, revoked, expired, bad signature)."""

    code = "UNAUTHENTICATED"


class PermissionDenied(RequestError):
    """A verified caller asked for a namespace or a scope it is not granted."""

    code = "PERMISSION_DENIED"
