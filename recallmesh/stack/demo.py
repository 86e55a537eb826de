"""The demo memories (`recallmesh up --demo`; the lab's latency runs load them too): the file,
in the plain JSONL format (recallmesh.client.jsonl reads it), the namespace they go in and a
question they answer."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

DEMO_FILE: Traversable = resources.files("recallmesh.demo") / "memories.jsonl"  # package data
DEMO_NAMESPACE = "demo"
DEMO_QUERY = "which frontend framework does Maya like?"
