"""Switching embedding models: re-embed into a side column, then switch atomically."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.services.embedding.reembed import reembed, switch
from tests.fixtures import scratch_database
from tests.helpers import one_row

pytestmark = pytest.mark.integration


@pytest.fixture
def other_model(tmp_path: Path) -> ModelManifest:
    """The default model files under another id and CLS pooling: a 'different model'."""
    base = ModelManifest.load()
    raw = json.loads(base.path.read_text())
    raw.update(model_id="minilm-cls-test", pooling="cls",
               onnx=str(base.onnx), tokenizer=str(base.tokenizer), sha256={})
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(raw))
    return ModelManifest.load(path)


def test_reembed_then_switch(admin_dsn: str, other_model: ModelManifest) -> None:
    with scratch_database(admin_dsn) as dsn:
        prepare_database(dsn)
        with psycopg.connect(dsn, autocommit=True) as db:
            def add(content: str, sensitive: bool = False) -> str:
                memory_id: str = one_row(db.execute(
                    "INSERT INTO memories (namespace, content, is_sensitive) "
                    "VALUES ('n', %s, %s) RETURNING id::text", (content, sensitive)))[0]
                return memory_id

            first, secret, second = add("likes Svelte"), add("PIN 1234", True), add("jazz fan")
            embedder = OnnxEmbedder(other_model, provider="cpu")
            assert reembed(dsn, other_model, batch_size=2, embedder=embedder) == 2
            assert reembed(dsn, other_model, embedder=embedder) == 0  # resumable: nothing left
            # An edit after the re-embed must not keep its pre-edit vector.
            db.execute("UPDATE memories SET content = 'likes Solid' WHERE id = %s", (second,))
            db.execute("DELETE FROM embedding_jobs")
            assert switch(dsn, other_model) == 1
            rows = {r[0]: (r[1], r[2]) for r in db.execute(
                "SELECT id::text, embedding IS NOT NULL, embedding_model FROM memories")}
            assert rows[first] == (True, "minilm-cls-test")
            assert rows[secret] == (False, None)
            assert rows[second] == (False, None)
            jobs = [r[0] for r in db.execute("SELECT memory_id::text FROM embedding_jobs")]
            assert jobs == [second]  # the indexer (new model) embeds it next
            assert one_row(db.execute("SELECT model_id FROM embedding_space"))[0] == (
                "minilm-cls-test")
            index = one_row(db.execute("SELECT indexdef FROM pg_indexes "
                                       "WHERE indexname = 'memories_embedding_hnsw_idx'"))[0]
            assert "(embedding halfvec_cosine_ops)" in index
            # The write path still works on the renamed column.
            third = add("new memory")
            assert one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE memory_id = %s",
                                      (third,)))[0] == 1
