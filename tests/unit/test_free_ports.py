"""free_port_env: every port of one stack free and different from the others."""

from __future__ import annotations

import socket

from recallmesh.shared.services import SERVICES
from recallmesh.stack.supervisor import free_port_env


def test_one_stacks_ports_are_all_different_and_free() -> None:
    for _ in range(50):
        env = free_port_env()
        ports = [int(v) for v in env.values()]
        assert len(ports) == 2 * (len(SERVICES) + 2)  # and the two HTTP fronts' (console, API)
        assert len(set(ports)) == len(ports)
    for port in ports:  # released: a service can bind them
        with socket.socket() as s:
            s.bind(("localhost", port))
