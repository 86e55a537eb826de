"""gRPC transport options both ends of an internal hop use: message sizes, reconnect backoff,
keepalive. Defined once for the servers (recallmesh/shared/server.py) and the channels
(recallmesh/wire/channel.py)."""

from __future__ import annotations

# The largest message an internal hop sends or receives (trusted callers only).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Keepalive pings from long-lived internal channels (every 30 s, even idle).
KEEPALIVE_TIME_MS = 30_000


def grpc_options(max_receive_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", max_receive_bytes),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        # Internal clients reconnect quickly after a peer restarts (gRPC's
        # default backoff grows to two minutes, far beyond any recall budget).
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 500),
    ]
