"""Integration: `recallmesh up` on its own embedded Postgres, the CLI, and a restart.

This is what `make run` does, on free ports and a temporary data directory.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallmesh.embedding_models.manifest import default_manifest_path
from recallmesh.shared.services import BY_NAME
from recallmesh.stack.supervisor import StackError, free_port_env, wait_serving
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.channel import dial_blocking

pytestmark = pytest.mark.integration


def up_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RECALLMESH_DSN"}
    env.update(free_port_env(), RECALLMESH_DATA_DIR=str(data_dir), COLUMNS="200")
    env["RECALLMESH_TARGET"] = f"localhost:{env['RECALLMESH_GATEWAY_PORT']}"
    return env


RECALLMESH = (sys.executable, "-m", "recallmesh.cli")  # the checkout's command


def start_up(env: dict[str, str], *args: str, command: tuple[str, ...] = RECALLMESH,
             cwd: Path | None = None) -> tuple[subprocess.Popen, list[str]]:
    """Start `recallmesh up` and read its output until it says it is serving."""
    process = subprocess.Popen(
        [*command, "up", *args], env=env, cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if "serving; press Ctrl-C" in line:
            break
    try:
        wait_serving(env["RECALLMESH_TARGET"], 10, process)
    except StackError:
        rest, _ = process.communicate(timeout=30)
        logs = sorted(Path(env["RECALLMESH_DATA_DIR"], "logs").glob("*.log"))
        tails = "".join(f"\n--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-15:])
                        for log in logs)
        pytest.fail("recallmesh up did not come up:\n" + "".join(lines) + rest + tails)
    return process, lines


def stop_up(process: subprocess.Popen, lines: list[str]) -> str:
    process.send_signal(signal.SIGTERM)
    rest, _ = process.communicate(timeout=30)
    output = "".join(lines) + rest
    assert process.returncode == 0, output
    return output


def cli(env: dict[str, str], *args: str, expect_rc: int = 0,
        command: tuple[str, ...] = RECALLMESH, cwd: Path | None = None) -> str:
    result = subprocess.run([*command, *args], env=env, cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == expect_rc, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_up_demo_cli_and_restart_keeps_data(tmp_path: Path):
    env = up_env(tmp_path / "data")
    process, lines = start_up(env, "--demo")
    try:
        out = cli(env, "recall", "--namespace", "demo", "peanut allergy", "--json")
        hits = json.loads(out)["hits"]
        assert "peanuts" in hits[0]["memory"]["content"]

        memory_id = cli(env, "store", "-n", "cli", "The boat is moored at pier 7",
                        "--tags", "boat,harbour", "--importance", "0.9").strip()
        assert "pier 7" in cli(env, "get", "-n", "cli", memory_id)
        assert "pier 7" in cli(env, "recall", "-n", "cli", "moored boat", "--explain")
        jsonl = tmp_path / "import.jsonl"
        jsonl.write_text(
            json.dumps({"content": "imported one", "created_at": "2024-01-01T00:00:00Z"}) + "\n"
            + json.dumps({"content": "imported two", "tags": ["x"], "importance": 0.2}) + "\n")
        assert "imported 2 memories" in cli(env, "import", "-n", "cli", str(jsonl))
        asked = cli(env, "recall", "-n", "cli", "imported a week ago", "--reference-time",
                    "2024-01-08T00:00:00Z", "--set", "time_boost=1")  # off by default
        assert "time window: 'a week ago' 2023-12-30T12:00:00Z .. 2024-01-02T12:00:00Z (1 raised)" \
            in asked
        assert "--reference-time needs a timezone" in cli(
            env, "recall", "-n", "cli", "x", "--reference-time", "2024-01-08", expect_rc=2)
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"content": "ok"}\n{"content": 5}\n')
        assert "bad.jsonl:2" in cli(env, "import", "-n", "cli", str(bad), expect_rc=2)
        assert "INVALID_ARGUMENT" in cli(env, "recall", "-n", "cli", " ", expect_rc=1)
        # per-request recall settings from the policy: the lexical leg alone, rrf fusion
        lexical = json.loads(cli(env, "recall", "-n", "cli", "moored boat", "--json", "--explain",
                                 "--set", "skip_legs=vector", "--set", "method=rrf"))
        assert lexical["fusion"].startswith("rrf")
        assert {leg["leg"]: leg["state"] for leg in lexical["legs"]}["vector"] == \
            "LEG_STATE_SKIPPED"
        for bad, message in (("context_hits=99", "fusion.context_hits must be within 0..50"),
                             ("colour=red", "unknown setting 'colour'"),
                             ("method", "expected name=value")):
            out = cli(env, "recall", "-n", "cli", "x", "--set", bad, expect_rc=2)
            assert message in out and "Traceback" not in out
        doomed = cli(env, "store", "-n", "cli", "delete me soon").strip()
        cli(env, "delete", "-n", "cli", doomed)
        assert "NOT_FOUND" in cli(env, "get", "-n", "cli", doomed, expect_rc=1)
    finally:
        first_output = stop_up(process, lines)
    assert "loaded 36 demo memories" in first_output
    assert "Maya prefers Svelte" in first_output  # the example recall was printed
    assert "stopped" in first_output

    process, lines = start_up(env, "--demo")
    try:
        assert "pier 7" in cli(env, "get", "-n", "cli", memory_id)
        assert "imported two" in cli(env, "recall", "-n", "cli", "imported")
        assert "NOT_FOUND" in cli(env, "get", "-n", "cli", doomed, expect_rc=1)
    finally:
        second_output = stop_up(process, lines)
    assert "already holds 36 memories" in second_output
    # the local admin key: created and printed by the first start only, kept owner-only
    key_file = Path(env["RECALLMESH_DATA_DIR"]) / "admin.key"
    key = key_file.read_text().strip()
    assert key.startswith("rmk_") and key_file.stat().st_mode & 0o777 == 0o600
    assert key in first_output and key not in second_output
    assert "shown once" in first_output and str(key_file) in second_output


def service_pid(parent: int, service: str) -> int:
    """The pid of the process `recallmesh up` (pid `parent`) runs `service` in."""
    module = BY_NAME[service].module.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = re.search(r"^PPid:\s+(\d+)", status, re.M)
        if ppid and int(ppid.group(1)) == parent and module in argv and "zombie" not in status:
            return int(entry.name)
    raise AssertionError(f"no {service} process under pid {parent}")


def kill_service(parent: int, service: str) -> None:
    """SIGKILL one service of `up`, and wait until it is gone."""
    pid = service_pid(parent, service)
    os.kill(pid, signal.SIGKILL)

    def gone() -> bool:
        try:
            return "zombie" in Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 10
    while not gone():
        assert time.monotonic() < deadline, f"{service} (pid {pid}) did not die"
        time.sleep(0.01)


@contextlib.contextmanager
def port_held(port: int) -> Iterator[None]:
    """Something else listens on localhost:`port` (IPv4 and IPv6 loopback): a service that
    wants it exits at once ("cannot listen on ...")."""
    sockets = []
    deadline = time.monotonic() + 10
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        while True:
            sock = socket.socket(family)
            # past the killed service's connections in TIME_WAIT; a listener still excludes
            # every other bind (the services do not use SO_REUSEPORT)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
                sock.listen()
                sockets.append(sock)
                break
            except OSError as exc:
                sock.close()
                if exc.errno != errno.EADDRINUSE:
                    if family == socket.AF_INET6:
                        break  # no IPv6 loopback here
                    raise
                assert time.monotonic() < deadline, f"port {port} ({host}) not free"
                time.sleep(0.01)
    try:
        yield
    finally:
        for sock in sockets:
            sock.close()


class Output:
    """The rest of `up`'s output, read by a thread while the test goes on."""

    def __init__(self, process: subprocess.Popen, lines: list[str]) -> None:
        self.lines = lines
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout_s: float = 30) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not in the output of up:\n" + "".join(self.lines))

    def text(self) -> str:
        self._thread.join(timeout=30)
        return "".join(self.lines)


def test_up_restarts_a_killed_service_and_gives_up_a_crash_loop(tmp_path: Path):
    env = up_env(tmp_path / "data") | {
        # a second between an exit and its restart (time to see the degraded recall), and
        # the second exit of a service within a minute is a crash loop
        "RECALLMESH_RESTART_BACKOFF_S": "1", "RECALLMESH_RESTART_LIMIT": "1"}
    process, lines = start_up(env)
    output = Output(process, lines)
    try:
        key = (Path(env["RECALLMESH_DATA_DIR"]) / "admin.key").read_text().strip()
        with dial_blocking(env["RECALLMESH_TARGET"], token=key) as channel:
            gateway = memory_pb2_grpc.MemoryServiceStub(channel)

            def recall() -> memory_pb2.RecallResponse:
                return gateway.Recall(memory_pb2.RecallRequest(
                    namespace="crash", query="moored boat"), timeout=10)

            def states(response: memory_pb2.RecallResponse) -> dict[str, str]:
                return {leg.leg: memory_pb2.LegState.Name(leg.state) for leg in response.legs}

            gateway.Store(memory_pb2.StoreRequest(namespace="crash", memory=memory_pb2.Memory(
                content="The boat is moored at pier 7")), timeout=10)
            assert not recall().degraded

            # SIGKILL the vector leg: the gateway answers at once, degraded, from the
            # lexical leg; the leg is restarted and recalls are whole again.
            kill_service(process.pid, "vector")
            response = recall()
            assert response.degraded and states(response)["vector"] == "LEG_STATE_ERROR"
            assert [h.memory.content for h in response.hits] == ["The boat is moored at pier 7"]
            output.wait_for("vector exited (killed by SIGKILL); restarting it in 1 s "
                            "(restart 1; 1 of 1 allowed within 60 s)")
            output.wait_for("vector restarted (restart 1): SERVING again")
            deadline = time.monotonic() + 10
            while recall().degraded:
                assert time.monotonic() < deadline, "recalls still degraded after the restart"
                time.sleep(0.1)
            assert states(recall()) == {"lexical": "LEG_STATE_OK", "vector": "LEG_STATE_OK"}

            # The lexical leg crashes at once when restarted (its port is taken): given up
            # after the limit, and the others keep serving.
            kill_service(process.pid, "lexical")
            with port_held(int(env["RECALLMESH_LEXICAL_PORT"])):  # before its restart (1 s)
                output.wait_for("lexical exited (exit code 1) and is given up: crash loop "
                                "(2 exits within 60 s, more than the limit of 1 restart)")
            time.sleep(1.5)  # not restarted again, though its port is free now
            with pytest.raises(AssertionError, match="no lexical process"):
                service_pid(process.pid, "lexical")
            assert process.poll() is None
            response = recall()
            assert response.degraded and states(response)["lexical"] == "LEG_STATE_ERROR"
            assert states(response)["vector"] == "LEG_STATE_OK"

        # The gateway given up: nothing answers clients, so up stops (status 1).
        kill_service(process.pid, "gateway")
        with port_held(int(env["RECALLMESH_GATEWAY_PORT"])):
            process.wait(timeout=60)
    finally:
        if process.poll() is None:  # failed early: stop up (and its services) politely
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    out = output.text()
    assert process.returncode == 1, out
    assert "the gateway is given up; stopping the stack" in out
    assert "restarts while serving: gateway 1, lexical 1, vector 1; given up: lexical, gateway" \
        in out
    assert "stopped" in out
    assert "  | " in out and "cannot listen on" in out  # the tail of the crashed one's log
    supervisor_log = (Path(env["RECALLMESH_DATA_DIR"]) / "logs" / "supervisor.log").read_text()
    assert "vector exited (killed by SIGKILL)" in supervisor_log
    assert "gateway exited (exit code 1) and is given up" in supervisor_log


@pytest.mark.parametrize("manifest, message", [
    ("/nonexistent/manifest.json", "make models"),
])
def test_setup_errors_are_one_clear_line_not_a_traceback(tmp_path: Path, manifest, message):
    env = up_env(tmp_path / "data")
    env["RECALLMESH_EMBEDDING_MANIFEST"] = manifest
    for command in (["migrate"], ["up"]):
        output = cli(env, *command, expect_rc=2 if command == ["migrate"] else 1)
        assert message in output and "Traceback" not in output


def test_settings_lists_each_recall_setting_with_this_environment_s_value(tmp_path: Path):
    env = up_env(tmp_path / "data") | {"RECALLMESH_CONTEXT_HITS": "7", "COLUMNS": "250"}
    out = cli(env, "settings")
    row = next(line for line in out.splitlines() if " context_hits " in line)
    assert [cell.strip() for cell in row.split("│")[1:-1]] == [
        "context_hits", "5", "7", "RECALLMESH_CONTEXT_HITS", "fusion.context_hits"]
    env["RECALLMESH_CONTEXT_HITS"] = "99"
    out = cli(env, "settings", expect_rc=2)
    assert "RECALLMESH_CONTEXT_HITS must be <= 50, got 99" in out and "Traceback" not in out


def test_switch_without_a_reembed_run_is_a_clear_error(tmp_path: Path):
    env = up_env(tmp_path / "data")
    manifest = str(default_manifest_path())
    output = cli(env, "reembed", "--manifest", manifest, "--switch", expect_rc=2)
    assert "run reembed without --switch first" in output and "Traceback" not in output
