"""The TypeScript client (clients/typescript) against the real stack: its own tests
(`npm test`, Node's test runner) and its README's example, through the HTTP/JSON API that
`recallmesh up` starts (Stack.start_http) in front of the session's gateway; and its
generated code is what the protos give. `make test` installs its npm packages first
(`make ts-client`)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallmesh.stack.supervisor import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def built() -> Path:
    """The client built from its sources now (its packages: `make ts-client`)."""
    npm = shutil.which("npm")
    assert npm, "npm is missing: `make ts-client` installs Debian's nodejs and npm"
    assert (CLIENT / "node_modules").is_dir(), \
        "clients/typescript has no node_modules: run `make ts-client`"
    done = subprocess.run([npm, "run", "build", "--silent"], cwd=CLIENT, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return CLIENT


@pytest.fixture(scope="module")
def http_url(stack: Stack) -> Iterator[str]:
    yield stack.start_http(free_port())
    stack.stop_http()


def node_env(stack: Stack, url: str, namespace: str) -> dict[str, str]:
    return {**os.environ, "RECALLMESH_HTTP_URL": url, "RECALLMESH_API_KEY": stack.api_key,
            "RECALLMESH_NAMESPACE": namespace}


def test_the_clients_own_tests_pass_against_the_stack(built: Path, http_url: str,
                                                      stack: Stack) -> None:
    done = subprocess.run(["npm", "test", "--silent"], cwd=built, capture_output=True,
                          text=True, timeout=240,
                          env=node_env(stack, http_url, f"ts-{uuid.uuid4().hex[:8]}"))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"^# pass [1-9]", done.stdout, re.MULTILINE), done.stdout[-2000:]
    assert re.search(r"^# fail 0$", done.stdout, re.MULTILINE), done.stdout[-2000:]


def test_the_readme_example_stores_recalls_lists_and_deletes(built: Path, http_url: str,
                                                             stack: Stack) -> None:
    readme = (built / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```ts\n(.*?)^```", readme, flags=re.MULTILINE | re.DOTALL)
    assert block == (built / "examples" / "quickstart.ts").read_text(encoding="utf-8")
    done = subprocess.run(["npm", "run", "example", "--silent"], cwd=built,
                          capture_output=True, text=True, timeout=120,
                          env=node_env(stack, http_url, f"ts-{uuid.uuid4().hex[:8]}"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("stored ") and "Tomás Ribeiro" in lines[1], lines
    assert "listed 1 memories" in lines and lines[-1].endswith("- 0 left"), lines


def test_the_generated_code_is_what_the_protos_give(built: Path, tmp_path: Path) -> None:
    buf = str(Path(sys.executable).with_name("buf"))  # the dev extra's buf-bin
    template = (built / "buf.gen.yaml").read_text().replace(
        "out: clients/typescript/src/gen", f"out: {tmp_path}")
    (tmp_path / "buf.gen.yaml").write_text(template)
    done = subprocess.run([buf, "generate", "--template", str(tmp_path / "buf.gen.yaml"),
                           "--path", "protos/recallmesh/v1/memory.proto"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for generated in tmp_path.rglob("*.ts"):
        committed = built / "src" / "gen" / generated.relative_to(tmp_path)
        assert committed.read_text() == generated.read_text(), \
            f"{committed} is stale: npm run generate (in clients/typescript)"
