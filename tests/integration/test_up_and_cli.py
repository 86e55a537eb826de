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
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recallmesh.embedding_models.manifest import default_manifest_path
from recallmesh.shared.services import BY_NAME
from recallmesh.stack.processes import StackError, wait_serving
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.channel import dial_blocking

pytestmark = pytest.mark.integration


def up_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RECALLMESH_DSN"}
    env.update(free_port_env(), RECALLMESH_DATA_DIR=str(data_dir), COLUMNS="200")
    env["RECALLMESH_TARGET"] = f"localhost:{env['RECALLMESH_GATEWAY_PORT']}"
    return env


RECALLMESH = (sys.executable, "-m", "recallmesh.cli")  # the checkout's command


ROOT = Path(__file__).resolve().parents[2]


def sh_blocks(page: Path) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", page.read_text(encoding="utf-8"),
                      flags=re.MULTILINE | re.DOTALL)


def run_documented_examples(env: dict[str, str], folder: Path) -> dict[str, str]:
    """README.md's and docs/cli.md's `.venv/bin/recallmesh` examples run as written, by bash,
    against the running demo (a `.venv/bin/recallmesh` in `folder` runs the checkout's command;
    README's `ID` placeholder becomes a demo memory's id). What each block printed, by page."""
    bin_dir = folder / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "recallmesh").write_text(
        f'#!/bin/sh\nexec {sys.executable} -m recallmesh.cli "$@"\n')
    (bin_dir / "recallmesh").chmod(0o755)
    demo = folder / "recallmesh" / "demo"
    demo.mkdir(parents=True)
    (demo / "memories.jsonl").write_bytes((ROOT / "recallmesh/demo/memories.jsonl").read_bytes())
    listed = json.loads(cli(env, "list", "-n", "demo", "--json"))
    some_id = listed["memories"][0]["id"]
    printed: dict[str, str] = {}
    for page in (ROOT / "README.md", ROOT / "docs" / "cli.md"):
        script = "\n".join(
            block.replace(" ID ", f" {some_id} ").replace(" ID\n", f" {some_id}\n")
            for block in sh_blocks(page) if block.lstrip("# \n").startswith(".venv/bin/")
            or "\n.venv/bin/recallmesh" in block)
        assert script, f"no recallmesh examples found in {page.name}"
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=folder,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, \
            f"{page.name}: {result.stdout[-3000:]}{result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr, result.stderr
        printed[page.name] = result.stdout
    return printed


def start_up(env: dict[str, str], *args: str, command: tuple[str, ...] = RECALLMESH,
             cwd: Path | None = None) -> tuple[subprocess.Popen[str], list[str]]:
    """Start `recallmesh up` and read its output until it says it is serving."""
    process = subprocess.Popen(
        [*command, "up", *args], env=env, cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    assert process.stdout is not None  # stdout=PIPE
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


def stop_up(process: subprocess.Popen[str], lines: list[str]) -> str:
    process.send_signal(signal.SIGTERM)
    rest: str = process.communicate(timeout=30)[0]
    output = "".join(lines) + rest
    assert process.returncode == 0, output
    return output


def cli(env: dict[str, str], *args: str, expect_rc: int = 0,
        command: tuple[str, ...] = RECALLMESH, cwd: Path | None = None) -> str:
    result = subprocess.run([*command, *args], env=env, cwd=cwd,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == expect_rc, result.stdout + result.stderr
    return result.stdout + result.stderr


def assert_console_serves_the_demo(env: dict[str, str], lines: list[str]) -> None:
    """`up` started the web console on its port, and a browser on this machine is signed in
    with the local admin key and finds the demo namespace browsable (docs/console.md)."""
    url = f"http://localhost:{env['RECALLMESH_CONSOLE_PORT']}"
    assert any(f"console: {url}" in line for line in lines), "".join(lines)
    # what docs/console.md says `up` prints, on this test's port
    (said,) = re.findall(r"^```\n(console: .*?)\n```", (ROOT / "docs" / "console.md").read_text(),
                         flags=re.MULTILINE)
    assert said.replace("http://localhost:8080", url) in "".join(lines), said
    with urllib.request.urlopen(f"{url}/", timeout=10) as reply:  # auto sign-in, loopback
        page = reply.read().decode()
        assert reply.status == 200 and reply.headers["content-security-policy"]
    assert '<a href="/ns/demo">demo</a>' in page, page
    admin_key = (Path(env["RECALLMESH_DATA_DIR"]) / "admin.key").read_text().strip()
    assert admin_key not in page
    for path in ("/readyz", "/static/htmx.min.js", "/static/console.css"):
        with urllib.request.urlopen(url + path, timeout=10) as reply:
            assert reply.status == 200, path


def test_up_demo_cli_and_restart_keeps_data(tmp_path: Path) -> None:
    env = up_env(tmp_path / "data")
    process, lines = start_up(env, "--demo")
    try:
        out = cli(env, "recall", "--namespace", "demo", "peanut allergy", "--json")
        hits = json.loads(out)["hits"]
        assert "peanuts" in hits[0]["memory"]["content"]
        assert_console_serves_the_demo(env, lines)
        http = f"http://localhost:{env['RECALLMESH_HTTP_PORT']}"
        assert any(f"HTTP/JSON API: {http}" in line for line in lines), "".join(lines)
        with urllib.request.urlopen(f"{http}/readyz", timeout=10) as reply:
            assert reply.status == 200

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
        assert {leg["leg"]: leg["state"] for leg in lexical["legs"]}["vector"] == "SKIPPED"
        for setting, message in (("context_hits=99", "fusion.context_hits must be within 0..50"),
                             ("colour=red", "unknown setting 'colour'"),
                             ("method", "expected name=value")):
            out = cli(env, "recall", "-n", "cli", "x", "--set", setting, expect_rc=2)
            assert message in out and "Traceback" not in out
        examples = run_documented_examples(env, tmp_path / "examples")
        readme = examples["README.md"]
        # the README's list and count examples match demo memories
        assert "oat-milk" in readme, readme
        counted = re.findall(r"^(\d+)$", readme, flags=re.MULTILINE)  # count prints a number
        assert counted and all(int(n) > 0 for n in counted), readme
        # every entry --explain prints is one docs/cli.md's recall section explains
        explained = cli(env, "recall", "-n", "demo", "who is her boss?", "--explain")
        section = (ROOT / "docs" / "cli.md").read_text().split("### `recall QUERY`")[1]
        section = section.split("\n### ")[0]
        entries = set(re.findall(r"\b([a-z_]+)#\d+", explained))
        assert "ranker" in entries and "vector" in entries, explained
        assert all(f"{e}#" in section for e in entries), (entries, section[:400])
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

    def __init__(self, process: subprocess.Popen[str], lines: list[str]) -> None:
        self.lines = lines
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None  # stdout=PIPE
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


def test_up_restarts_a_killed_service_and_gives_up_a_crash_loop(tmp_path: Path) -> None:
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
                reply: memory_pb2.RecallResponse = gateway.Recall(memory_pb2.RecallRequest(
                    namespace="crash", query="moored boat"), timeout=10)
                return reply

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
def test_setup_errors_are_one_clear_line_not_a_traceback(tmp_path: Path, manifest: str,
                                                         message: str) -> None:
    env = up_env(tmp_path / "data")
    env["RECALLMESH_EMBEDDING_MANIFEST"] = manifest
    for command in (["migrate"], ["up"]):
        output = cli(env, *command, expect_rc=2 if command == ["migrate"] else 1)
        assert message in output and "Traceback" not in output


def client_env(stack: Stack, tmp_path: Path) -> dict[str, str]:
    """The CLI's environment against the session's stack, as a narrow terminal would set it
    (COLUMNS=80): output that is piped must not wrap at it all the same."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
    env.update(RECALLMESH_TARGET=stack.endpoints["gateway"], RECALLMESH_API_KEY=stack.api_key,
               RECALLMESH_DATA_DIR=str(tmp_path), COLUMNS="80")
    return env


def run(env: dict[str, str], *args: str, expect_rc: int = 0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*RECALLMESH, *args], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == expect_rc, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return result


def as_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(run(env, *args, "--json").stdout)


def test_cli_stores_updates_lists_and_shows_history(stack: Stack, ns: str, tmp_path: Path) -> None:
    env = client_env(stack, tmp_path)
    old = as_json(env, "store", "-n", ns, "Maya lives in Lyon", "--tag", "home",
                  "--metadata", "src=chat")["memory"]
    stored = as_json(env, "store", "-n", ns, "Maya moved to Berlin", "--supersedes", old["id"],
                     "--metadata", "src=email", "--metadata", "lang=en", "--wait")
    new = stored["memory"]
    assert stored["indexed"] and not stored["existing"]
    assert new["metadata"] == {"src": "email", "lang": "en"} and not new["pinned"]

    # update: only the given fields change
    pinned = as_json(env, "update", "-n", ns, new["id"], "--tag", "moves", "--tag", "city",
                     "--importance", "0.8", "--pin")["memory"]
    assert (pinned["tags"], pinned["importance"], pinned["pinned"]) == (["moves", "city"], 0.8,
                                                                        True)
    assert (pinned["content"], pinned["metadata"]) == (new["content"], new["metadata"])
    out = run(env, "update", "-n", ns, new["id"], "--content", "Maya moved to Berlin in 2025",
              "--unpin", "--metadata", "src=email", "--wait").stdout
    assert out.strip() == f"updated {new['id']} (content, metadata, pinned)"

    listed = as_json(env, "list", "-n", ns)
    assert [m["id"] for m in listed["memories"]] == [new["id"]]  # the old fact has ended
    assert listed["next_page_token"] == ""
    ended = as_json(env, "list", "-n", ns, "--include-ended", "--meta", "src=chat")["memories"]
    assert [(m["id"], m["superseded_by"]) for m in ended] == [(old["id"], new["id"])]
    both = as_json(env, "list", "-n", ns, "--include-ended", "--meta", "src=chat",
                   "--meta", "src=email", "--order", "created", "--ascending")["memories"]
    assert [m["id"] for m in both] == [old["id"], new["id"]]
    assert as_json(env, "count", "-n", ns, "--include-ended") == {"count": 2}
    assert as_json(env, "count", "-n", ns, "--tag", "home", "--include-ended",
                   "--importance-max", "0.5") == {"count": 1}
    paged = as_json(env, "list", "-n", ns, "--include-ended", "--page-size", "1")
    assert len(paged["memories"]) == 1 and paged["next_page_token"]
    rest = as_json(env, "list", "-n", ns, "--include-ended", "--page-size", "1",
                   "--page-token", paged["next_page_token"])
    assert [m["id"] for m in paged["memories"] + rest["memories"]] == [new["id"], old["id"]]
    every = as_json(env, "list", "-n", ns, "--include-ended", "--page-size", "1", "--all")
    assert len(every["memories"]) == 2 and every["next_page_token"] == ""

    history = as_json(env, "history", "-n", ns, new["id"])
    assert [v["version"] for v in history["versions"]] == [1, 2]
    assert history["versions"][0]["changed"] == ["tags", "importance", "pinned"]
    assert history["versions"][1]["memory"]["content"] == "Maya moved to Berlin"
    assert history["versions"][1]["changed"] == ["content", "metadata", "pinned"]
    assert history["memory"]["content"] == "Maya moved to Berlin in 2025"
    assert history["memory"]["metadata"] == {"src": "email"}  # replaced: lang is gone
    assert history["relations"] == [{"type": "supersedes", "source_id": new["id"],
                                     "target_id": old["id"],
                                     "created_at": history["relations"][0]["created_at"]}]
    text = run(env, "history", "-n", ns, old["id"]).stdout
    assert f"{new['id']} supersedes this" in text and "no earlier versions" in text
    assert f"this supersedes {old['id']}" in run(env, "history", "-n", ns, new["id"]).stdout

    # bad input: one clear line on stderr, status 2, nothing sent
    for args, message in (
        (["update", "-n", ns, new["id"]], "update: nothing to change"),
        (["update", "-n", ns, "not-an-id", "--pin"], "not a memory id (a UUID): 'not-an-id'"),
        (["list", "-n", ns, "--created-after", "2026-01-01"],
         "list: --created-after needs a timezone"),
        (["list", "-n", ns, "--meta", "src"], "--meta 'src': expected KEY=VALUE"),
        (["count", "-n", ns, "--importance-min", "2"], "--importance-min must be within [0, 1]"),
        (["store", "-n", ns, "x", "--metadata", "a=1", "--metadata", "a=2"],
         "--metadata: key 'a' given twice"),
        (["store", "-n", ns, "x", "--supersedes", "nope"], "--supersedes: not a memory id"),
        (["delete-matching", "-n", ns], "delete-matching needs at least one filter"),
    ):
        err = run(env, *args, expect_rc=2).stderr
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert "NOT_FOUND" in run(env, "history", "-n", ns + "-x", new["id"], expect_rc=1).stderr


def test_cli_export_delete_import_round_trip_and_delete_matching(stack: Stack, ns: str,
                                                                 tmp_path: Path) -> None:
    env = client_env(stack, tmp_path)
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(json.dumps(line) for line in (
        {"id": first, "content": "Alex prefers tea", "pinned": True,
         "metadata": {"src": "chat"}, "created_at": "2026-01-01T09:00:00Z"},
        {"id": second, "content": "Alex switched to coffee", "metadata": {"src": "email"},
         "relations": [{"type": "supersedes", "target_id": first}]},
        {"content": "Alex's desk is by the window", "metadata": {"src": "email", "z": "1"}},
        {"content": "Alex works on the search team", "tags": ["work"]},
    )) + "\n")
    assert "imported 4 memories" in run(env, "import", "-n", ns, str(plain)).stdout
    assert as_json(env, "get", "-n", ns, first)["pinned"]
    run(env, "update", "-n", ns, second, "--importance", "0.9", "--tag", "drinks")

    exported = tmp_path / "export.jsonl"
    done = run(env, "export", "-n", ns, "--out", str(exported))
    assert done.stdout == "" and f"exported 4 memories to {exported}" in done.stderr
    lines = exported.read_text().splitlines()
    assert len(lines) == 4 and all("memory" in json.loads(line) for line in lines)
    assert run(env, "export", "-n", ns).stdout == exported.read_text()  # stdout: the same
    only_email = run(env, "export", "-n", ns, "--meta", "src=email").stdout.splitlines()
    assert len(only_email) == 2

    assert as_json(env, "delete-namespace", "-n", ns, "--confirm", ns) == {
        "namespace": ns, "memories_removed": 4}
    assert as_json(env, "count", "-n", ns, "--include-deleted") == {"count": 0}
    out = run(env, "import", "-n", ns, str(exported)).stdout
    assert f"imported 4 memories into namespace '{ns}' (0 unchanged); 1 relations written" \
        in out
    again = as_json(env, "import", "-n", ns, str(exported))
    assert (again["format"], again["imported"], again["unchanged"]) == ("records", 0, 4)
    reexported = tmp_path / "again.jsonl"
    run(env, "export", "-n", ns, "--out", str(reexported))
    assert reexported.read_bytes() == exported.read_bytes()
    history = as_json(env, "history", "-n", ns, second)
    assert history["versions"][0]["changed"] == ["tags", "importance"]  # kept by the import
    assert history["versions"][0]["imported_by"]  # and it says who imported it (issue 54)
    table = run(env, "history", "-n", ns, second).stdout
    assert "(imported by " in table and f"memory {second}: version 2" in table
    err = run(env, "import", "-n", ns, str(exported), "--wait-index", expect_rc=2).stderr
    assert "apply to the plain memory format" in err

    # delete-matching: a dry run until --confirm
    dry = run(env, "delete-matching", "-n", ns, "--meta", "src=email").stdout
    assert "2 memories matched; dry run, nothing changed (add --confirm to delete them)" in dry
    assert second in dry
    assert as_json(env, "count", "-n", ns, "--include-ended") == {"count": 4}
    done = as_json(env, "delete-matching", "-n", ns, "--meta", "src=email", "--confirm")
    assert (done["dry_run"], done["matched"], done["deleted"]) == (False, 2, 2)
    assert as_json(env, "count", "-n", ns, "--include-ended") == {"count": 2}
    assert as_json(env, "count", "-n", ns, "--include-ended", "--include-deleted") == {
        "count": 4}


def test_a_32_kib_memory_lists_in_a_few_unwrapped_lines(stack: Stack, ns: str,
                                                        tmp_path: Path) -> None:
    env = client_env(stack, tmp_path)  # COLUMNS=80, output piped
    content = ("The quarterly report covers every region in detail. " * 700)[:32 * 1024]
    memory_id = run(env, "store", "-n", ns, content, "--category", "report").stdout.strip()
    for args in (["list", "-n", ns], ["recall", "-n", ns, "quarterly report", "--explain"],
                 ["delete-matching", "-n", ns, "--category", "report"]):
        lines = run(env, *args).stdout.splitlines()
        assert len(lines) <= 10, "\n".join(lines[:20])
        (row,) = [line for line in lines if memory_id in line]  # the whole id, on one line
        assert "The quarterly report covers" in row and "…" in row  # cut, not wrapped
        assert all(len(line) <= 600 for line in lines)
    shown = run(env, "get", "-n", ns, memory_id).stdout
    assert content.strip() in shown  # get prints it whole, unwrapped
    assert len(shown.splitlines()) < 15
    # a message longer than 80 columns stays one line on stderr
    err = run(env, "update", "-n", ns, memory_id, expect_rc=2).stderr
    assert len(err.splitlines()) == 1 and len(err) > 80


def test_settings_lists_each_recall_setting_with_this_environment_s_value(tmp_path: Path) -> None:
    env = up_env(tmp_path / "data") | {"RECALLMESH_CONTEXT_HITS": "7", "COLUMNS": "250"}
    out = cli(env, "settings")
    row = next(line for line in out.splitlines() if " context_hits " in line)
    assert [cell.strip() for cell in row.split("│")[1:-1]] == [
        "context_hits", "5", "7", "RECALLMESH_CONTEXT_HITS", "fusion.context_hits"]
    env["RECALLMESH_CONTEXT_HITS"] = "99"
    out = cli(env, "settings", expect_rc=2)
    assert "RECALLMESH_CONTEXT_HITS must be <= 50, got 99" in out and "Traceback" not in out


def test_switch_without_a_reembed_run_is_a_clear_error(tmp_path: Path) -> None:
    env = up_env(tmp_path / "data")
    manifest = str(default_manifest_path())
    output = cli(env, "reembed", "--manifest", manifest, "--switch", expect_rc=2)
    assert "run reembed without --switch first" in output and "Traceback" not in output
