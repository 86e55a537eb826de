"""Unit: a failed call to a leg or service says what failed, never the peer's own text."""

from __future__ import annotations

import logging

import grpc
import pytest

from recallmesh.gateway.fanout import LegError, LegTimeout
from recallmesh.gateway.legs import leg_failure

PEER_TEXT = ("failed to connect to all addresses; last error: UNKNOWN: "
             "ipv4:127.0.0.1:50999: Connection refused")


def rpc_error(code: grpc.StatusCode, details: str = PEER_TEXT) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details=details)


@pytest.mark.parametrize("source, named, expected", [
    ("lexical leg", False, "UNAVAILABLE"),
    ("embedding service", True, "embedding service: UNAVAILABLE"),
    ("fusion service", True, "fusion service: UNAVAILABLE"),
])
def test_failure_names_the_code_and_logs_the_peer_text(caplog: pytest.LogCaptureFixture,
                                                       source: str, named: bool,
                                                       expected: str) -> None:
    with caplog.at_level(logging.WARNING, logger="recallmesh.gateway.legs"):
        failure = leg_failure(rpc_error(grpc.StatusCode.UNAVAILABLE), source, named=named)
    assert isinstance(failure, LegError) and str(failure) == expected
    assert "127.0.0.1" not in str(failure) and "Connection refused" not in str(failure)
    assert PEER_TEXT in caplog.text and source in caplog.text  # the operator still sees it


def test_a_peers_own_message_is_not_passed_on() -> None:
    failure = leg_failure(rpc_error(grpc.StatusCode.INVALID_ARGUMENT,
                                    "query_vector has 3 dimensions, the stored ones 768"),
                          "vector leg", named=False)
    assert str(failure) == "INVALID_ARGUMENT"


def test_deadline_exceeded_is_a_timeout() -> None:
    assert isinstance(leg_failure(rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED), "lexical leg",
                                  named=False), LegTimeout)
