"""What the console's largest uploads cost everyone else (issue 65, docs/decisions/0019-console.md
"Bounded requests").

  python -m benchmarks.performance.console_upload [--report-to FILE.md] [--json FILE]

A stack of its own (no indexer: what is measured is the console and the gateway's Import, not
embedding), and `python -m recallmesh.console` on a free port, signed in with the stack's
local admin key. Each upload below is posted through the import form while a prober asks for
`/healthz` and a namespace's page (which calls the gateway) every 50 ms; the console's
resident memory is sampled every 20 ms from /proc.

  - `over the cap`: 32 MiB of the smallest exported records, more lines than the console
    takes (refused, naming the first line past the cap);
  - `empty lines`: 32 MiB of newlines (refused past the cap of lines);
  - `largest accepted`: MAX_IMPORT_RECORDS records of about 1.6 KiB each, 32 MiB in all
    (imported);
  - `one huge line`: a single record of 32 MiB (refused by the gateway's limits);
  - `nested deep`: a line nested 100,000 deep (refused, naming the line);
  - `over the size`: a body over the import's limit (refused before it is read).

Prints, per upload: its answer and time, the probes' worst and p99 delay during it, and the
console's peak RSS (VmHWM) and RSS before and after.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchmarks.harness.script import BENCH_ENV, log, machine_info, publish, start_stack
from benchmarks.harness.stats import percentile
from recallmesh.console.bounds import MAX_IMPORT_BYTES, MAX_IMPORT_RECORDS
from recallmesh.shared.services import BY_NAME
from recallmesh.stack.supervisor import Stack, free_port_env

NAMESPACE = "console-upload"
MIB = 2 ** 20
WHEN = "2026-03-01T09:00:00Z"


def record(content: str) -> bytes:
    return (json.dumps({"memory": {"id": str(uuid.uuid4()), "content": content,
                                   "category": "note", "created_at": WHEN,
                                   "updated_at": WHEN}}) + "\n").encode()


def uploads() -> list[tuple[str, bytes]]:
    tiny = record("x")
    over_cap = tiny * (MAX_IMPORT_BYTES // len(tiny))
    size = MAX_IMPORT_BYTES // MAX_IMPORT_RECORDS - len(record(""))
    accepted = b"".join(record(f"memory {i} " + "w" * (size - 20))
                        for i in range(MAX_IMPORT_RECORDS))
    huge = record("h" * (MAX_IMPORT_BYTES - 300))
    deep = tiny + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    return [("over the cap", over_cap), ("empty lines", b"\n" * MAX_IMPORT_BYTES),
            ("largest accepted", accepted),
            ("one huge line", huge), ("nested deep", deep), ("over the size", b"")]


class Console:
    """The console process and one signed-in session of it."""

    def __init__(self, stack: Stack, port: int, log_path: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
        env.update(RECALLMESH_TARGET=stack.endpoints["gateway"], RECALLMESH_LOG_FORMAT="text",
                   RECALLMESH_CONSOLE_PORT=str(port), RECALLMESH_CONSOLE_METRICS_PORT="0")
        with open(log_path, "wb") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "recallmesh.console"],
                                            env=env, stdout=out, stderr=subprocess.STDOUT)
        self.port = port
        self.stack = stack
        deadline = time.monotonic() + 60
        while self.get("/healthz")[0] != 200:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"the console did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        status, headers, _ = self.request("POST", "/sign-in", urlencode(
            {"key": stack.api_key, "next": "/"}).encode(),
            {"content-type": "application/x-www-form-urlencoded"})
        cookie = headers.get("set-cookie", "")
        self.cookie = cookie.split(";", 1)[0]
        if status != 303 or not self.cookie:
            raise SystemExit(f"sign-in failed: {status}")
        page = self.get(f"/ns/{NAMESPACE}")[2].decode()
        found = re.search(r'name="csrf" value="([^"]+)"', page)
        if not found:
            raise SystemExit("no CSRF token on the namespace's page")
        self.csrf = found.group(1)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 300
                ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            sent = dict(headers or {})
            if getattr(self, "cookie", ""):
                sent["cookie"] = self.cookie
            conn.request(method, path, body=body, headers=sent)
            reply = conn.getresponse()
            return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        try:
            return self.request("GET", path, timeout=30)
        except OSError:
            return 0, {}, b""

    def upload(self, data: bytes, declared: int | None = None) -> tuple[int, str, float]:
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\ncontent-disposition: form-data; name=\"csrf\"\r\n\r\n"
                f"{self.csrf}\r\n--{boundary}\r\ncontent-disposition: form-data; name=\"file\"; "
                f"filename=\"upload.jsonl\"\r\ncontent-type: application/x-ndjson\r\n\r\n"
                ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
        headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
        if declared is not None:
            headers["content-length"] = str(declared)
            body = b""
        started = time.perf_counter()
        try:
            status, _, answer = self.request("POST", f"/ns/{NAMESPACE}/import", body, headers)
        except OSError as exc:
            return 0, str(exc), time.perf_counter() - started
        text = answer.decode(errors="replace")
        said = re.search(r'data-testid="error">([^<]*)<', text)
        return status, (said.group(1) if said else text.strip().splitlines()[0] if text.strip()
                        else ""), time.perf_counter() - started

    def rss(self) -> tuple[int, int]:
        """(VmRSS, VmHWM) in bytes."""
        values = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                values[key] = int(value.split()[0]) * 1024
        return values["VmRSS"], values["VmHWM"]

    def reset_peak(self) -> None:
        """Start VmHWM again from the current RSS (Linux: writing 5 to clear_refs)."""
        try:
            Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
        except OSError:
            pass

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def measure(console: Console, name: str, data: bytes) -> dict[str, Any]:
    delays: dict[str, list[float]] = {"/healthz": [], "page": [], "gateway": []}
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            for key, path in (("/healthz", "/healthz"), ("page", f"/ns/{NAMESPACE}")):
                started = time.perf_counter()
                status = console.get(path)[0]
                delays[key].append((time.perf_counter() - started) * 1000
                                   if status == 200 else float("inf"))
            time.sleep(0.05)

    def probe_gateway() -> None:  # the page's own calls, straight to the gateway
        with console.stack.client(namespace=NAMESPACE) as client:
            while not done.is_set():
                started = time.perf_counter()
                client.count()
                delays["gateway"].append((time.perf_counter() - started) * 1000)
                time.sleep(0.05)

    samples: list[int] = []

    def sample() -> None:
        while not done.is_set():
            samples.append(console.rss()[0])
            time.sleep(0.02)

    console.reset_peak()
    before = console.rss()[0]
    threads = [threading.Thread(target=probe), threading.Thread(target=sample),
               threading.Thread(target=probe_gateway)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    status, said, seconds = console.upload(
        data, declared=MAX_IMPORT_BYTES * 2 if name == "over the size" else None)
    time.sleep(0.3)
    done.set()
    for t in threads:
        t.join()
    after, peak = console.rss()
    row: dict[str, Any] = {"upload": name, "bytes": len(data), "status": status,
                           "answer": said[:160],
           "seconds": seconds, "rss_before": before, "rss_after": after,
           "rss_peak": max([peak, *samples])}
    for key, values in delays.items():
        row[f"{key}_max_ms"] = max(values)
        row[f"{key}_p99_ms"] = percentile(values, 99)
        row[f"{key}_probes"] = len(values)
    log(f"{name}: {status} in {seconds:.1f} s; /healthz worst {row['/healthz_max_ms']:.0f} ms, "
        f"page worst {row['page_max_ms']:.0f} ms, gateway worst {row['gateway_max_ms']:.0f} ms;"
        f" peak RSS {row['rss_peak'] / MIB:.0f} MiB")
    return row


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="recallmesh-console-upload-") as tmp:
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env()},
                      services=tuple(s for s in BY_NAME if s != "indexer"))
        start_stack(stack)
        try:
            with stack.client(namespace=NAMESPACE) as client:
                client.store("a memory the probes' page lists", category="note")
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            console = Console(stack, port, Path(tmp) / "console.log")
            try:
                rows = [measure(console, name, data) for name, data in uploads()]
            finally:
                console.stop()
        finally:
            stack.stop()
    return {"rows": rows, "max_import_bytes": MAX_IMPORT_BYTES,
            "max_import_records": MAX_IMPORT_RECORDS}


def report(r: dict[str, Any]) -> str:
    lines = [
        "# The console under its largest uploads", "",
        "Generated by `python -m benchmarks.performance.console_upload`; what is sent and "
        "measured: the script's docstring. The import takes at most "
        f"{r['max_import_bytes'] // MIB} MiB and {r['max_import_records']:,} records.", "",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
        "| upload | MiB | answer | s | /healthz worst / p99 ms | a page worst / p99 ms | "
        "its gateway call worst / p99 ms | RSS before / peak / after MiB |",
        "|---|---:|---|---:|---|---|---|---|"]
    for row in r["rows"]:
        answer = f"{row['status']} {row['answer']}".replace("|", "\\|")
        lines.append(
            f"| {row['upload']} | {row['bytes'] / MIB:.1f} | {answer[:90]} | "
            f"{row['seconds']:.1f} | {row['/healthz_max_ms']:.0f} / "
            f"{row['/healthz_p99_ms']:.0f} | {row['page_max_ms']:.0f} / "
            f"{row['page_p99_ms']:.0f} | {row['gateway_max_ms']:.0f} / "
            f"{row['gateway_p99_ms']:.0f} | {row['rss_before'] / MIB:.0f} / "
            f"{row['rss_peak'] / MIB:.0f} / {row['rss_after'] / MIB:.0f} |")
    worst = max(max(row["/healthz_max_ms"], row["page_max_ms"]) for row in r["rows"])
    peak = max(row["rss_peak"] for row in r["rows"])
    lines += ["", f"Worst delay of another request to the console during any upload: "
              f"**{worst:.0f} ms** (a page's includes its own gateway call, whose worst is in "
              f"the column beside it); the console's peak RSS: **{peak / MIB:.0f} MiB**.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run()
    publish(report(result), args.report_to, args.json, result)


if __name__ == "__main__":
    main()
