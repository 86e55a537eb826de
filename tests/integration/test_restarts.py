"""Integration: a Stack with the restart watcher (what `recallmesh up` runs), real processes.

A service that is killed comes back; one that crashes at once every time it starts (a bad
setting that only its restarts see) is given up after the limit, and the others keep serving.
`recallmesh up` itself is driven in tests/integration/test_up_and_cli.py.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from recallmesh.stack.restarts import RestartPolicy
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.fixtures import stack_env
from tests.helpers import recall, store

pytestmark = pytest.mark.integration

# Fast enough for a test: the 4th exit within a minute is one too many.
FAST = RestartPolicy(backoff_s=0.05, max_backoff_s=0.2, limit=3, window_s=60)


def wait_until(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s:g} s: {what}"
        time.sleep(0.05)


def states(response: memory_pb2.RecallResponse) -> dict[str, str]:
    return {leg.leg: memory_pb2.LegState.Name(leg.state) for leg in response.legs}


def test_a_crash_loop_is_given_up_and_the_others_keep_serving(dsn: str, tmp_path: Path,
                                                              ns: str) -> None:
    stack = Stack(env=stack_env(tmp_path, dsn, RECALLMESH_FUSION_TARGET="local"),
                  services=("embedding", "lexical", "vector", "gateway"))
    stack.start(timeout_s=60)
    try:
        watcher = stack.watch(FAST)
        with stack.dial() as channel:
            gateway = memory_pb2_grpc.MemoryServiceStub(channel)
            store(gateway, ns, "The boat is moored at pier 7")

            # Killed once: back within seconds, and recalls are whole again.
            os.kill(stack.processes["vector"].pid, signal.SIGKILL)
            wait_until(lambda: any(e.kind == "serving" for e in watcher.events), 30,
                       "the vector leg restarted")
            wait_until(lambda: not recall(gateway, ns, "moored boat").degraded, 10,
                       "recalls whole again")
            assert watcher.restarts == {"vector": 1}
            assert "killed by SIGKILL" in watcher.events[0].message

            # A setting only the restarts of the vector leg see: it now exits at once.
            stack.env["RECALLMESH_VECTOR_ITERATIVE_SCAN"] = "sideways"
            survivors = {n: p for n, p in stack.processes.items() if n != "vector"}
            os.kill(stack.processes["vector"].pid, signal.SIGKILL)
            wait_until(lambda: watcher.given_up, 60, "the crash loop given up")
            assert watcher.given_up == ["vector"]
            # exits 1 (killed, back) and 2 (killed) were restarted, 3 (the restart crashed at
            # once) too; 4 (again) made 4 exits within the window: given up, not restarted.
            assert watcher.restarts == {"vector": 3}
            assert [e.kind for e in watcher.events if e.service == "vector"] == [
                "exited", "serving", "exited", "exited", "given_up"]
            given_up = watcher.events[-1]
            assert given_up.kind == "given_up" and "exit code 1" in given_up.message
            assert "RECALLMESH_VECTOR_ITERATIVE_SCAN must be" in given_up.log_tail
            time.sleep(FAST.max_backoff_s * 2)
            assert "vector" not in stack.processes and watcher.restarts == {"vector": 3}

            # The others never stopped, and the gateway serves what the lexical leg finds.
            assert all(stack.processes[n] is p and p.poll() is None for n, p in survivors.items())
            response = recall(gateway, ns, "moored boat")
            assert response.degraded and states(response)["vector"] == "LEG_STATE_ERROR"
            assert [h.memory.content for h in response.hits] == ["The boat is moored at pier 7"]
        log = (tmp_path / "logs" / "supervisor.log").read_text()
        assert "vector exited (killed by SIGKILL)" in log and "is given up: crash loop" in log
    finally:
        stack.stop()
