"""The embedding models the test suite runs, in one place (issue 53).

`make test` fetches exactly these, sha256-checked (`make test-models`, which runs this module),
and CI fetches them into an empty model cache on every run, so a test that starts using a model
nobody fetches fails on the machine that introduced it. A test reaches a model other than the
served default only through `suite_manifest`, which fails (never skips) with the step that
brings what is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recallmesh.embedding_models.manifest import DEFAULT_MODEL, model_cache_dir

# The served default (every stack the suite starts) and the small model that keeps the
# failover and restore tests' embedding off the machine's two cores.
SUITE_MODELS = (DEFAULT_MODEL, "all-MiniLM-L6-v2")


def suite_manifest(name: str) -> Path:
    """The cached manifest.json of a model the suite fetches, or fail the calling test with
    what is missing and which make step brings it."""
    if name not in SUITE_MODELS:
        pytest.fail(f"{name} is not in tests/models.py SUITE_MODELS: add it there so that "
                    "`make test` fetches it", pytrace=False)
    path = model_cache_dir() / name / "manifest.json"
    if not path.is_file():
        pytest.fail(f"{name} is not in the model cache ({path}): `make test-models` (part of "
                    "`make test`) fetches it", pytrace=False)
    return path


def suite_manifest_env(name: str) -> dict[str, str]:
    """RECALLMESH_EMBEDDING_MANIFEST for a suite model, for a stack the test starts."""
    return {"RECALLMESH_EMBEDDING_MANIFEST": str(suite_manifest(name))}


if __name__ == "__main__":
    from recallmesh.embedding_models.fetch import main

    raise SystemExit(main(list(SUITE_MODELS)))
