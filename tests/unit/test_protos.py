"""The committed stubs must be exactly what grpcio-tools generates from protos/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO_DIR = REPO_ROOT / "protos"
STUB_DIR = REPO_ROOT / "recallmesh" / "v1"


def test_generated_stubs_are_not_stale(tmp_path: Path) -> None:
    protos = sorted(str(p) for p in (PROTO_DIR / "recallmesh" / "v1").glob("*.proto"))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={tmp_path}",
         f"--pyi_out={tmp_path}", f"--grpc_python_out={tmp_path}", *protos],
        check=True,
    )
    generated = {p.name: p.read_bytes() for p in (tmp_path / "recallmesh" / "v1").iterdir()}
    committed = {p.name: p.read_bytes() for p in STUB_DIR.iterdir()
                 if p.suffix in (".py", ".pyi") and p.name != "__init__.py"}
    assert sorted(generated) == sorted(committed), "run `make protos` and commit the result"
    stale = [name for name in generated if generated[name] != committed[name]]
    assert not stale, f"stale stubs {stale}: run `make protos` and commit the result"
