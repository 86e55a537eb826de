"""The client's exceptions: one per gRPC status a caller handles differently, all keeping it.

    RecallmeshError                  every failed call (.code, .details, .retry_after_ms)
    ├── InvalidArgumentError         the request is wrong (the message says which field)
    ├── NotFoundError                no such memory in this namespace (or deleted / expired)
    ├── AlreadyExistsError           a client-chosen id taken by a different write
    ├── UnauthenticatedError         no credential, or one the gateway does not accept
    ├── PermissionDeniedError        the credential does not grant this namespace or scope
    ├── ResourceExhaustedError       the gateway shed the call (after the client's retries)
    ├── UnavailableError             no gateway answered (after the client's retries)
    └── DeadlineExceededError        the call's deadline passed
"""

from __future__ import annotations

import grpc

from recallmesh.shared.errors import PUSHBACK_KEY  # the gateway sends it when shedding


class RecallmeshError(Exception):
    """A call the gateway (or the channel) refused; `code` is its gRPC status."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, details: str, code: grpc.StatusCode | None = None,
                 retry_after_ms: int | None = None) -> None:
        super().__init__(details)
        self.details = details
        if code is not None:
            self.code = code
        self.retry_after_ms = retry_after_ms  # the server's hint, when it sent one

    def __str__(self) -> str:
        return f"{self.code.name}: {self.details}"


class InvalidArgumentError(RecallmeshError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFoundError(RecallmeshError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExistsError(RecallmeshError):
    code = grpc.StatusCode.ALREADY_EXISTS


class UnauthenticatedError(RecallmeshError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDeniedError(RecallmeshError):
    code = grpc.StatusCode.PERMISSION_DENIED


class ResourceExhaustedError(RecallmeshError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class UnavailableError(RecallmeshError):
    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceededError(RecallmeshError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[RecallmeshError]] = {
    cls.code: cls for cls in (InvalidArgumentError, NotFoundError, AlreadyExistsError,
                              UnauthenticatedError, PermissionDeniedError,
                              ResourceExhaustedError, UnavailableError, DeadlineExceededError)
}


def from_rpc_error(exc: grpc.RpcError) -> RecallmeshError:
    """The exception for a failed call (a grpc.RpcError that is a grpc.Call)."""
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = (exc.details() if hasattr(exc, "details") else "") or code.name
    retry_after = None
    trailing = exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None
    for key, value in trailing or ():
        if key == PUSHBACK_KEY:
            try:
                retry_after = int(value)
            except ValueError:
                pass
    cls = _BY_CODE.get(code, RecallmeshError)
    return cls(details, code, retry_after)
