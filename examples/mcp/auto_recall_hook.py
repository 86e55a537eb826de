#!/usr/bin/env python3
"""Auto-recall hook: put the memories relevant to each prompt before it (docs/mcp.md).

An agent runs it when the user submits a prompt, with JSON on standard input that carries
the prompt (Claude Code's `UserPromptSubmit` hook sends {"prompt": "...", "session_id": ...,
"hook_event_name": "UserPromptSubmit", ...}); what it prints is added to the model's
context. It pipes the prompt to `recallmesh context --namespace NS -` and prints the block.
It never blocks a prompt: on any failure it prints nothing, says why on standard error and
exits 0.

Configuration (environment; the namespace may also be the first argument):
  RECALLMESH_MCP_NAMESPACE    the namespace, the same as the MCP server's
  RECALLMESH_TARGET           the gateway (default localhost:50051)
  RECALLMESH_API_KEY          the credential (default: the local key `recallmesh up` wrote)
  RECALLMESH_BIN              the recallmesh command (default: the one next to this Python,
                              else the one on PATH)
  RECALLMESH_HOOK_MAX_TOKENS  the block's token budget (default 800)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def recallmesh_command() -> str:
    configured = os.environ.get("RECALLMESH_BIN")
    if configured:
        return configured
    beside = Path(sys.executable).with_name("recallmesh")
    if beside.exists():
        return str(beside)
    return shutil.which("recallmesh") or "recallmesh"


def main() -> int:
    namespace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RECALLMESH_MCP_NAMESPACE")
    if not namespace:
        print("auto_recall_hook: set RECALLMESH_MCP_NAMESPACE", file=sys.stderr)
        return 0
    try:
        event = json.load(sys.stdin)
    except ValueError as exc:
        print(f"auto_recall_hook: the hook's input is not JSON: {exc}", file=sys.stderr)
        return 0
    prompt = str(event.get("prompt", "")).strip() if isinstance(event, dict) else ""
    if not prompt:
        return 0
    command = [recallmesh_command(), "context", "--namespace", namespace,
               "--max-tokens", os.environ.get("RECALLMESH_HOOK_MAX_TOKENS", "800"), "-"]
    try:
        done = subprocess.run(command, input=prompt[:4000], capture_output=True, text=True,
                              timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"auto_recall_hook: {exc}", file=sys.stderr)
        return 0
    if done.returncode != 0:
        print(f"auto_recall_hook: recallmesh context failed: {done.stderr.strip()}",
              file=sys.stderr)
        return 0
    block = done.stdout.strip()
    if block:
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
