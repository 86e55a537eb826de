"""Integration: `recallmesh up` on its own embedded Postgres, the CLI, and a restart.

This is what `make run` does, on free ports and a temporary data directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from recallmesh.models.manifest import default_manifest_path
from recallmesh.platform.supervisor import StackError, free_port_env, wait_serving

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
                    "2024-01-08T00:00:00Z")
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
    env = up_env(tmp_path / "data") | {"RECALLMESH_CONTEXT_HITS": "3", "COLUMNS": "250"}
    out = cli(env, "settings")
    row = next(line for line in out.splitlines() if " context_hits " in line)
    assert [cell.strip() for cell in row.split("│")[1:-1]] == [
        "context_hits", "5", "3", "RECALLMESH_CONTEXT_HITS", "fusion.context_hits"]
    env["RECALLMESH_CONTEXT_HITS"] = "99"
    out = cli(env, "settings", expect_rc=2)
    assert "RECALLMESH_CONTEXT_HITS must be <= 50, got 99" in out and "Traceback" not in out


def test_switch_without_a_reembed_run_is_a_clear_error(tmp_path: Path):
    env = up_env(tmp_path / "data")
    manifest = str(default_manifest_path())
    output = cli(env, "reembed", "--manifest", manifest, "--switch", expect_rc=2)
    assert "run reembed without --switch first" in output and "Traceback" not in output
