"""A gRPC status code's HTTP status: google.rpc.Code's mapping (googleapis
google/rpc/code.proto), which the Connect protocol follows. One table for every HTTP face of
the gateway: the HTTP/JSON API and the web console's error pages."""

from __future__ import annotations

HTTP_STATUS = {
    "CANCELLED": 499, "UNKNOWN": 500, "INVALID_ARGUMENT": 400, "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "PERMISSION_DENIED": 403, "UNAUTHENTICATED": 401,
    "RESOURCE_EXHAUSTED": 429, "FAILED_PRECONDITION": 400, "ABORTED": 409, "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501, "INTERNAL": 500, "UNAVAILABLE": 503, "DATA_LOSS": 500,
}


def http_status(code_name: str) -> int:
    """The HTTP status of a gRPC status code's name (an unknown one: 500)."""
    return HTTP_STATUS.get(code_name, 500)
