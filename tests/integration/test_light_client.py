"""The client is light: the package installed without extras (a new virtualenv, outside the
checkout) brings grpcio, protobuf and typing-extensions only, and `import recallmesh.client`
loads no server code, no database driver, no metrics or tracing; that client stores and
recalls through the session's real gateway; its `recallmesh` command says which extra it
needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recallmesh.stack.supervisor import Stack

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]
# What `pip install recallmesh` (no extra) may bring: the package, gRPC, protobuf and
# typing-extensions (and what the venv starts with: pip, on older Pythons setuptools).
ALLOWED_DISTRIBUTIONS = {"recallmesh", "grpcio", "protobuf", "typing_extensions", "pip",
                         "setuptools"}
# The recallmesh modules `import recallmesh.client` may load: the client, the wire, the
# generated messages and the floor's light modules (no db, server or telemetry).
ALLOWED_PACKAGES = ("recallmesh.client", "recallmesh.wire", "recallmesh.v1")
# recallmesh.policy: the recall settings' declarations (what a request may override);
# recallmesh.shared.legs: the legs' names a request's weights and skip_legs name
ALLOWED_MODULES = {"recallmesh", "recallmesh.policy", "recallmesh.shared",
                   "recallmesh.shared.errors", "recallmesh.shared.legs",
                   "recallmesh.shared.settings", "recallmesh.shared.services",
                   "recallmesh.shared.tls", "recallmesh.shared.credentials",
                   "recallmesh.shared.transport"}
SERVER_ONLY = ("psycopg", "psycopg_pool", "prometheus_client", "opentelemetry", "numpy",
               "onnxruntime", "tokenizers", "spacy", "scipy", "jwt", "rich", "grpc_health")


def run(*args: str, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("light-client")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("RECALLMESH_")}
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(CHECKOUT), "-w",
        str(root / "dist"), cwd=root, env=env)
    (wheel,) = (root / "dist").glob("recallmesh-*.whl")
    venv = root / "venv"
    run(sys.executable, "-m", "venv", str(venv), cwd=root, env=env)
    run(str(venv / "bin" / "pip"), "install", "-q", str(wheel), cwd=root, env=env)
    return venv, env


@pytest.mark.timeout(600)  # the wheel's build and install (pip's cache warm: under a minute)
def test_the_package_without_extras_installs_only_the_clients_dependencies(
        light_venv: tuple[Path, dict[str, str]]) -> None:
    venv, env = light_venv
    listed = json.loads(run(str(venv / "bin" / "pip"), "list", "--format", "json",
                            cwd=venv, env=env))
    names = {d["name"].lower().replace("-", "_") for d in listed}
    assert names <= ALLOWED_DISTRIBUTIONS, names - ALLOWED_DISTRIBUTIONS


def test_importing_the_client_loads_no_server_code(light_venv: tuple[Path, dict[str, str]]) -> None:
    venv, env = light_venv
    loaded = json.loads(run(str(venv / "bin" / "python"), "-c",
                            "import json, sys, recallmesh.client; "
                            "print(json.dumps(sorted(sys.modules)))", cwd=venv, env=env))
    ours = [m for m in loaded if m == "recallmesh" or m.startswith("recallmesh.")]
    def allowed(module: str) -> bool:
        return module in ALLOWED_MODULES or any(
            module == p or module.startswith(p + ".") for p in ALLOWED_PACKAGES)

    assert ours and all(allowed(m) for m in ours), [m for m in ours if not allowed(m)]
    assert not [m for m in loaded if m.split(".")[0] in SERVER_ONLY]


def test_the_light_client_stores_and_recalls_through_the_gateway(
        light_venv: tuple[Path, dict[str, str]], stack: Stack, ns: str) -> None:
    venv, env = light_venv
    script = (
        "import sys\n"
        "from recallmesh.client import Client\n"
        "with Client(sys.argv[1], namespace=sys.argv[2], api_key=sys.argv[3]) as memory:\n"
        "    stored = memory.store('Maya prefers tabs over spaces', category='preference',\n"
        "                          wait_indexed=True)\n"
        "    hits = memory.recall('tabs or spaces?').hits\n"
        "    print(stored.memory.id == hits[0].memory.id)\n")
    out = run(str(venv / "bin" / "python"), "-c", script, stack.endpoints["gateway"], ns,
              stack.api_key, cwd=venv, env=env)
    assert out.strip() == "True"


@pytest.mark.parametrize("args", [("--help",), ("recall", "-n", "demo", "tabs or spaces?")])
def test_the_command_of_the_light_install_says_what_to_install(
        light_venv: tuple[Path, dict[str, str]], args: tuple[str, ...]) -> None:
    """Packaging installs `recallmesh` with the package whatever the extras; without the
    server extra it names the extra to install in one line, not a ModuleNotFoundError."""
    venv, env = light_venv
    result = subprocess.run([str(venv / "bin" / "recallmesh"), *args], cwd=venv, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "ModuleNotFoundError" not in result.stderr
    assert "pip install 'recallmesh[server]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
