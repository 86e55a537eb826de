"""Restarts of the local stack's services (`Stack.watch()`, what `recallmesh up` runs): a
RestartPolicy decides when a service whose process exited is started again and when a crash
loop is given up; the RestartWatcher, the stack's own thread, does it and logs each exit and
restart to <data dir>/logs/supervisor.log."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from recallmesh.shared.settings import ConfigError, env_float, env_int
from recallmesh.stack.processes import StackError, describe_exit, log_tail

if TYPE_CHECKING:
    import subprocess


class Supervised(Protocol):
    """What the watcher restarts: service processes by name (recallmesh.stack.supervisor's
    Stack), changed under `lock`."""

    processes: dict[str, subprocess.Popen[bytes]]

    @property
    def lock(self) -> threading.RLock: ...

    @property
    def data_dir(self) -> Path: ...

    @property
    def start_timeout_s(self) -> float: ...

    def log_path(self, name: str) -> Path: ...

    def spawn(self, name: str) -> subprocess.Popen[bytes]: ...

    def await_serving(self, name: str, process: subprocess.Popen[bytes],
                      timeout_s: float | None = None) -> None: ...


@dataclass(frozen=True)
class RestartPolicy:
    """When a service whose process exited is started again, and when it is given up.

    Each exit waits `backoff_s` before the restart, doubled for every other exit of the same
    service within the last `window_s`, at most `max_backoff_s`. An exit that makes more than
    `limit` exits within `window_s` is a crash loop: the service is given up (not restarted
    again). So at most `limit` restarts per window; `limit` 0 never restarts. A service that
    stays up for `window_s` starts afresh at `backoff_s`.
    """

    backoff_s: float = 0.5
    max_backoff_s: float = 10.0
    limit: int = 5
    window_s: float = 60.0

    def __post_init__(self) -> None:
        if self.backoff_s < 0 or self.max_backoff_s < self.backoff_s:
            raise ConfigError("restart backoff must be >= 0 and at most the maximum backoff")
        if self.limit < 0 or self.window_s <= 0:
            raise ConfigError("restart limit must be >= 0 and the window > 0")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RestartPolicy:
        backoff = env_float("RECALLMESH_RESTART_BACKOFF_S", cls.backoff_s, environ, minimum=0)
        maximum = env_float("RECALLMESH_RESTART_MAX_BACKOFF_S", max(cls.max_backoff_s, backoff),
                            environ, minimum=backoff)
        window = env_float("RECALLMESH_RESTART_WINDOW_S", cls.window_s, environ, minimum=0.001)
        limit = env_int("RECALLMESH_RESTART_LIMIT", cls.limit, minimum=0, environ=environ)
        return cls(backoff_s=backoff, max_backoff_s=maximum, limit=limit, window_s=window)

    def decide(self, exits_in_window: int) -> RestartDecision:
        """What to do about a service that has exited `exits_in_window` times within the
        window, the exit just seen included (>= 1)."""
        if exits_in_window > self.limit:
            return RestartDecision(give_up=True, delay_s=0.0, exits=exits_in_window)
        delay = self.backoff_s * 2.0 ** min(exits_in_window - 1, 62)
        return RestartDecision(give_up=False, delay_s=min(delay, self.max_backoff_s),
                               exits=exits_in_window)


@dataclass(frozen=True)
class RestartDecision:
    give_up: bool
    delay_s: float  # wait this long before the restart (when not given up)
    exits: int  # exits within the window, the last one included


class ExitHistory:
    """The exits of one service within the policy's window (times from a monotonic clock)."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self._exits: deque[float] = deque()

    def record(self, now: float) -> RestartDecision:
        """Note an exit at `now` and decide what to do about it."""
        while self._exits and self._exits[0] <= now - self.policy.window_s:
            self._exits.popleft()
        self._exits.append(now)
        return self.policy.decide(len(self._exits))


@dataclass(frozen=True)
class StackEvent:
    """Something the restart watcher saw or did (also a line of logs/supervisor.log)."""

    kind: str  # "exited" (a restart follows), "serving" (back), "slow", "given_up"
    service: str
    message: str
    log_tail: str = ""  # the last lines of the service's log, for "exited" and "given_up"


class RestartWatcher:
    """Restarts the services of a Stack (Supervised) whose process exits, by a RestartPolicy.

    One thread polls the processes every `poll_s`. An exit is logged with its status and the
    tail of the service's log; the service is started again after the policy's backoff (the
    others keep serving meanwhile), or given up in a crash loop. A restarted service is
    reported back once its health check answers SERVING. `restarts` counts the restarts of each
    service, `given_up` names those given up; every event is also a line of
    <data dir>/logs/supervisor.log.
    """

    def __init__(self, stack: Supervised, policy: RestartPolicy,
                 on_event: Callable[[StackEvent], None] | None = None,
                 poll_s: float = 0.1, clock: Callable[[], float] = time.monotonic) -> None:
        self.stack = stack
        self.policy = policy
        self.on_event = on_event
        self.poll_s = poll_s
        self.clock = clock
        self.restarts: dict[str, int] = {}
        self.given_up: list[str] = []
        self.events: list[StackEvent] = []
        self._histories: dict[str, ExitHistory] = {}
        self._due: dict[str, float] = {}  # service -> when it is started again
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recallmesh-restarts", daemon=True)
        self._log_lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (restarts that are due are not made; running processes stay)."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def forget(self, name: str) -> None:
        """`name` was stopped on purpose: no restart of it is pending any more."""
        with self.stack.lock:
            self._due.pop(name, None)

    def _run(self) -> None:
        while not self._stopping.wait(self.poll_s):
            self.check()

    def check(self) -> None:
        """One round: note the processes that exited, start those whose backoff has passed."""
        now = self.clock()
        with self.stack.lock:
            if self._stopping.is_set():
                return
            for name, process in list(self.stack.processes.items()):
                code = process.poll()
                if code is not None:
                    del self.stack.processes[name]
                    self._exited(name, code, now)
            for name, due in list(self._due.items()):
                if now >= due:
                    del self._due[name]
                    self._restart(name)

    def _exited(self, name: str, code: int, now: float, reason: str = "") -> None:
        reason = reason or describe_exit(code)
        history = self._histories.setdefault(name, ExitHistory(self.policy))
        decision = history.record(now)
        tail = log_tail(self.stack.log_path(name), 10)
        window, limit = f"{self.policy.window_s:g} s", self.policy.limit
        if decision.give_up:
            self.given_up.append(name)
            self._emit(StackEvent(
                "given_up", name,
                f"{name} exited ({reason}) and is given up: crash loop "
                f"({decision.exits} exits within {window}, more than the limit of {limit} "
                f"restart{'s' if limit != 1 else ''}); not restarted again", tail))
            return
        self._due[name] = now + decision.delay_s
        self._emit(StackEvent(
            "exited", name,
            f"{name} exited ({reason}); restarting it in {decision.delay_s:g} s "
            f"(restart {self.restarts.get(name, 0) + 1}; {decision.exits} of {limit} allowed "
            f"within {window})", tail))

    def _restart(self, name: str) -> None:
        count = self.restarts[name] = self.restarts.get(name, 0) + 1
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            with open(self.stack.log_path(name), "a", encoding="utf-8") as log:
                log.write(f"----- {stamp} restarted by the supervisor (restart {count}) -----\n")
            process = self.stack.spawn(name)
        except OSError as exc:  # not even the interpreter started: counts as an exit
            self._exited(name, 1, self.clock(), f"could not be started: {exc}")
            return
        started = self.clock()
        threading.Thread(target=self._await_serving, args=(name, process, count, started),
                         name=f"recallmesh-restart-{name}", daemon=True).start()

    def _await_serving(self, name: str, process: subprocess.Popen[bytes], count: int,
                       started: float) -> None:
        timeout = self.stack.start_timeout_s
        try:
            self.stack.await_serving(name, process)
        except StackError:
            if process.poll() is None and not self._stopping.is_set():
                self._emit(StackEvent("slow", name, f"{name} restarted (restart {count}) but "
                                      f"is not SERVING after {timeout:g} s; left running"))
            return  # it exited: the next check() sees it
        if not self._stopping.is_set():
            self._emit(StackEvent("serving", name, f"{name} restarted (restart {count}): "
                                  f"SERVING again after {self.clock() - started:.1f} s"))

    def _emit(self, event: StackEvent) -> None:
        self.events.append(event)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lines = [f"{stamp} {event.kind} {event.message}"]
        if event.log_tail:
            lines.append(f"  last lines of {self.stack.log_path(event.service)}:")
            lines.extend(f"  | {line}" for line in event.log_tail.splitlines())
        try:
            with self._log_lock, open(self.stack.data_dir / "logs" / "supervisor.log", "a",
                                      encoding="utf-8") as log:
                log.write("\n".join(lines) + "\n")
        except OSError:
            pass
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a broken listener must not stop the restarts
                pass
