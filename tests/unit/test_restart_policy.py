"""The restart policy of `recallmesh up` (recallmesh/stack/restarts.py): backoff, the
crash-loop limit, its settings, and the watcher's decisions on fake processes and a fake clock."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from recallmesh.shared.settings import ConfigError
from recallmesh.stack.processes import describe_exit
from recallmesh.stack.restarts import ExitHistory, RestartPolicy, RestartWatcher
from recallmesh.stack.supervisor import Stack


def test_backoff_doubles_with_each_exit_in_the_window_up_to_the_cap() -> None:
    policy = RestartPolicy(backoff_s=0.5, max_backoff_s=3.0, limit=10, window_s=60)
    assert [policy.decide(n).delay_s for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert not any(policy.decide(n).give_up for n in range(1, 11))
    assert policy.decide(10_000).give_up  # no overflow on the way


def test_more_exits_than_the_limit_within_the_window_gives_up() -> None:
    policy = RestartPolicy(backoff_s=1, max_backoff_s=10, limit=3, window_s=60)
    history = ExitHistory(policy)
    decisions = [history.record(t) for t in (0.0, 2.0, 5.0, 10.0)]
    assert [d.give_up for d in decisions] == [False, False, False, True]
    assert [d.exits for d in decisions] == [1, 2, 3, 4]
    assert [d.delay_s for d in decisions[:3]] == [1, 2, 4]


def test_exits_older_than_the_window_are_forgotten_and_the_backoff_starts_afresh() -> None:
    policy = RestartPolicy(backoff_s=1, max_backoff_s=10, limit=2, window_s=60)
    history = ExitHistory(policy)
    assert history.record(0.0).delay_s == 1
    assert history.record(30.0).delay_s == 2
    # 61 s: the exit at 0 has left the window; 2 in the window (30, 61) is within the limit
    third = history.record(61.0)
    assert (third.give_up, third.exits, third.delay_s) == (False, 2, 2)
    # a service that then stays up for a whole window is back at the first backoff
    assert history.record(200.0).delay_s == 1
    # but three exits within 60 s are one too many
    assert history.record(210.0).exits == 2
    assert history.record(220.0).give_up


def test_limit_zero_never_restarts() -> None:
    assert ExitHistory(RestartPolicy(limit=0)).record(0.0).give_up


def test_settings_from_the_environment() -> None:
    assert RestartPolicy.from_env({}) == RestartPolicy(0.5, 10.0, 5, 60.0)
    policy = RestartPolicy.from_env({
        "RECALLMESH_RESTART_BACKOFF_S": "0.05", "RECALLMESH_RESTART_MAX_BACKOFF_S": "0.2",
        "RECALLMESH_RESTART_LIMIT": "2", "RECALLMESH_RESTART_WINDOW_S": "30"})
    assert policy == RestartPolicy(backoff_s=0.05, max_backoff_s=0.2, limit=2, window_s=30)
    # a first backoff above the default cap raises the cap with it
    assert RestartPolicy.from_env({"RECALLMESH_RESTART_BACKOFF_S": "20"}).max_backoff_s == 20


@pytest.mark.parametrize("variable, value, message", [
    ("RECALLMESH_RESTART_LIMIT", "-1", "RECALLMESH_RESTART_LIMIT must be >= 0"),
    ("RECALLMESH_RESTART_LIMIT", "many", "must be an integer"),
    ("RECALLMESH_RESTART_BACKOFF_S", "-1", "RECALLMESH_RESTART_BACKOFF_S must be >= 0"),
    ("RECALLMESH_RESTART_MAX_BACKOFF_S", "0.1", "RECALLMESH_RESTART_MAX_BACKOFF_S must be >="),
    ("RECALLMESH_RESTART_WINDOW_S", "0", "RECALLMESH_RESTART_WINDOW_S must be >="),
])
def test_bad_settings_are_config_errors(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RestartPolicy.from_env({variable: value})


def test_exit_status_in_words() -> None:
    assert describe_exit(1) == "exit code 1"
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_exit(-200) == "killed by signal 200"


class FakeProcess:
    def __init__(self) -> None:
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode


class Watcher(RestartWatcher):
    def _await_serving(self, *args: object) -> None:  # no real process to ask
        pass


# A Stack of fake processes, its watcher, the services it spawned, and the watcher's clock.
Watched = tuple[Stack, Watcher, list[str], list[float]]


@pytest.fixture
def watched(tmp_path: Path) -> Watched:
    """A Stack of fake processes, a watcher on a fake clock (checked by hand, no thread)."""
    stack = Stack(env={"RECALLMESH_DATA_DIR": str(tmp_path)})
    spawned: list[str] = []

    def spawn(name: str) -> FakeProcess:
        spawned.append(name)
        process = stack.processes[name] = FakeProcess()  # type: ignore[assignment]  # a fake
        return process

    # fakes for Popen (poll and returncode are all the watcher reads)
    stack.spawn = spawn  # type: ignore[method-assign, assignment]
    for name in ("vector", "gateway"):
        stack.processes[name] = FakeProcess()  # type: ignore[assignment]  # a fake Popen
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "vector.log").write_text("line 1\nTraceback: boom\n")
    now = [100.0]
    watcher = Watcher(stack, RestartPolicy(backoff_s=1, max_backoff_s=4, limit=2, window_s=60),
                      clock=lambda: now[0])
    stack._watcher = watcher  # as Stack.watch() does, without its thread
    return stack, watcher, spawned, now


def test_the_watcher_restarts_after_the_backoff_and_gives_up_a_crash_loop(
        watched: Watched) -> None:
    stack, watcher, spawned, now = watched
    gateway = stack.processes["gateway"]
    stack.processes["vector"].returncode = -signal.SIGKILL
    watcher.check()
    assert "vector" not in stack.processes and spawned == []
    exited = watcher.events[-1]
    assert exited.kind == "exited" and "killed by SIGKILL" in exited.message
    assert "restarting it in 1 s (restart 1; 1 of 2 allowed within 60 s)" in exited.message
    assert "Traceback: boom" in exited.log_tail
    now[0] += 0.5
    watcher.check()
    assert spawned == []  # still backing off
    now[0] += 0.5
    watcher.check()
    assert spawned == ["vector"] and watcher.restarts == {"vector": 1}
    assert "restarted by the supervisor (restart 1)" in stack.log_path("vector").read_text()

    stack.processes["vector"].returncode = 1  # crashes at once: 2 s, then given up
    watcher.check()
    assert "exit code 1" in watcher.events[-1].message and "in 2 s" in watcher.events[-1].message
    now[0] += 2
    watcher.check()
    assert spawned == ["vector", "vector"]
    stack.processes["vector"].returncode = 1
    watcher.check()
    given_up = watcher.events[-1]
    assert given_up.kind == "given_up" and watcher.given_up == ["vector"]
    assert "3 exits within 60 s, more than the limit of 2 restarts" in given_up.message
    now[0] += 100
    watcher.check()
    assert spawned == ["vector", "vector"] and watcher.restarts == {"vector": 2}
    assert stack.processes == {"gateway": gateway}  # the others are untouched
    log = (stack.data_dir / "logs" / "supervisor.log").read_text()
    assert log.count(" exited vector exited") == 2 and " given_up vector exited" in log
    assert "  | Traceback: boom" in log


def test_a_service_stopped_on_purpose_is_not_restarted(watched: Watched) -> None:
    stack, watcher, spawned, now = watched
    stack.processes["vector"].returncode = 1
    watcher.check()
    stack.stop_service("vector")  # while its restart is pending
    now[0] += 10
    watcher.check()
    assert spawned == [] and watcher.restarts == {}
    gateway = stack.processes.pop("gateway")  # stop_service pops before it signals
    gateway.returncode = 0
    watcher.check()
    assert spawned == [] and [e.kind for e in watcher.events] == ["exited"]
