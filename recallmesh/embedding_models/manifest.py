"""The embedding model manifest: everything needed to run an ONNX sentence-embedding model.

A manifest is a small JSON file next to the model files (paths are relative to
it). Any ONNX sentence-embedding model can be served by writing one; no code
changes. Read by the embedding service (to run the model) and by the stack /
migrations (to size the `memories.embedding` column), so it lives here and has
no onnxruntime dependency.

    {
      "model_id": "all-MiniLM-L6-v2-onnx-int8",   stored beside every vector
      "onnx": "model.onnx",                       ONNX graph
      "tokenizer": "tokenizer.json",              Hugging Face fast-tokenizer file
      "output": "last_hidden_state",              token states (batch, seq, dim)
      "pooling": "mean" | "cls",                  mean is over the attention mask
      "normalize": true,                          L2-normalise the pooled vector
      "dimension": 384,
      "max_length": 256,                          tokens; longer inputs are truncated
      "query_prefix": "", "document_prefix": "",  e.g. "query: " / "passage: " for e5
      "precision": "int8",                        informational (ModelInfo)
      "sha256": {"model.onnx": "...", ...},       optional; checked before use
      "probe": {                                  optional; checked when the service starts
        "kind": "document",                       how the texts are embedded
        "texts": ["...", ...],                    a few fixed texts
        "vectors": ["<base64>", ...],             their vectors from the model's reference
                                                  (fp32) build, little-endian float16
        "min_cosine": 0.9                         optional; the lowest cosine accepted
      }
    }

The probe is how a model that loads and runs but computes wrong vectors on this machine
(an int8 build without reduce_range on a CPU without VNNI: its integer MatMuls saturate) is
refused at start instead of filling the database with noise. Catalogue models carry one
(`probe` in the catalogue entry, copied into manifest.json by fetch); a manifest of one's
own may leave it out, and its vectors are then not checked.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from recallmesh.shared.settings import ConfigError

POOLINGS = ("mean", "cls")
KINDS = ("query", "document")
DEFAULT_MODEL = "nomic-embed-text-v1.5"
# The lowest cosine a probe text's vector may have to its reference: below every right build
# (fp32, int8 with reduce_range), far above the noise of an int8 build without reduce_range on
# a CPU without VNNI (docs/decisions/0005-int8-model.md, "The probe").
PROBE_MIN_COSINE = 0.9


def model_cache_dir() -> Path:
    """Where fetched models live: RECALLMESH_MODEL_CACHE, else ~/.cache/recallmesh/models."""
    raw = os.environ.get("RECALLMESH_MODEL_CACHE", "").strip()
    if raw:
        return Path(raw).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser().resolve() / "recallmesh" / "models"


def default_manifest_path() -> Path:
    """RECALLMESH_EMBEDDING_MANIFEST, else the default model in the cache."""
    raw = os.environ.get("RECALLMESH_EMBEDDING_MANIFEST", "").strip()
    if raw:
        return Path(raw).expanduser().resolve()
    return model_cache_dir() / DEFAULT_MODEL / "manifest.json"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def encode_vector(vector: list[float] | tuple[float, ...]) -> str:
    """A vector as a probe stores it: base64 of its little-endian float16 values."""
    return base64.b64encode(struct.pack(f"<{len(vector)}e", *vector)).decode("ascii")


def decode_vector(text: str, dimension: int) -> tuple[float, ...]:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != 2 * dimension:
        raise ValueError(f"a probe vector holds {len(raw) // 2} values, not {dimension}")
    return struct.unpack(f"<{dimension}e", raw)


@dataclass(frozen=True)
class ModelProbe:
    """Fixed texts and their vectors from the model's reference build (see the module doc)."""

    kind: str
    texts: tuple[str, ...]
    vectors: tuple[tuple[float, ...], ...]
    min_cosine: float = PROBE_MIN_COSINE

    @classmethod
    def from_dict(cls, raw: object, dimension: int) -> ModelProbe:
        if not isinstance(raw, dict):
            raise ValueError("probe must be a JSON object")
        unknown = set(raw) - {"kind", "texts", "vectors", "min_cosine"}
        if unknown:
            raise ValueError(f"unknown probe keys {sorted(unknown)}")
        kind = str(raw.get("kind", "document"))
        if kind not in KINDS:
            raise ValueError(f"probe kind must be one of {KINDS}")
        texts, vectors = raw.get("texts"), raw.get("vectors")
        if not isinstance(texts, list) or not isinstance(vectors, list) or not texts:
            raise ValueError("probe needs lists of texts and vectors")
        if len(texts) != len(vectors):
            raise ValueError(f"probe has {len(texts)} texts but {len(vectors)} vectors")
        try:
            decoded = tuple(decode_vector(str(v), dimension) for v in vectors)
        except (binascii.Error, struct.error) as exc:
            raise ValueError(f"probe vector is not base64 float16: {exc}") from None
        min_cosine = float(raw.get("min_cosine", PROBE_MIN_COSINE))
        if not -1.0 <= min_cosine <= 1.0:
            raise ValueError("probe min_cosine must be within [-1, 1]")
        for vector in decoded:
            if not all(math.isfinite(x) for x in vector) or not any(vector):
                raise ValueError("probe vectors must be finite and non-zero")
        return cls(kind, tuple(str(t) for t in texts), decoded, min_cosine)


@dataclass(frozen=True)
class ModelManifest:
    path: Path
    model_id: str
    onnx: Path
    tokenizer: Path
    dimension: int
    max_length: int
    pooling: str = "mean"
    normalize: bool = True
    output: str = "last_hidden_state"
    query_prefix: str = ""
    document_prefix: str = ""
    precision: str = "fp32"
    sha256: dict[str, str] = field(default_factory=dict)
    probe: ModelProbe | None = None

    @classmethod
    def load(cls, path: Path | str | None = None) -> ModelManifest:
        path = Path(path) if path is not None else default_manifest_path()
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(
                f"no embedding model manifest at {path}: run `make models` "
                "(or set RECALLMESH_EMBEDDING_MANIFEST)"
            ) from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read model manifest {path}: {exc}") from None
        return cls.from_dict(raw, path)

    @classmethod
    def from_dict(cls, raw: object, path: Path) -> ModelManifest:
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: manifest must be a JSON object")
        missing = [k for k in ("model_id", "onnx", "tokenizer", "dimension", "max_length")
                   if k not in raw]
        if missing:
            raise ConfigError(f"{path}: manifest lacks {', '.join(missing)}")
        unknown = set(raw) - {f for f in cls.__dataclass_fields__ if f != "path"}
        if unknown:
            raise ConfigError(f"{path}: unknown manifest keys {sorted(unknown)}")
        base = path.parent
        try:
            manifest = cls(
                path=path,
                model_id=str(raw["model_id"]),
                onnx=(base / str(raw["onnx"])).resolve(),
                tokenizer=(base / str(raw["tokenizer"])).resolve(),
                dimension=int(raw["dimension"]),
                max_length=int(raw["max_length"]),
                pooling=str(raw.get("pooling", "mean")),
                normalize=bool(raw.get("normalize", True)),
                output=str(raw.get("output", "last_hidden_state")),
                query_prefix=str(raw.get("query_prefix", "")),
                document_prefix=str(raw.get("document_prefix", "")),
                precision=str(raw.get("precision", "fp32")),
                sha256={str(k): str(v) for k, v in dict(raw.get("sha256", {})).items()},
                probe=(ModelProbe.from_dict(raw["probe"], int(raw["dimension"]))
                       if raw.get("probe") is not None else None),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: bad manifest value: {exc}") from None
        if not manifest.model_id.strip():
            raise ConfigError(f"{path}: model_id is empty")
        if manifest.pooling not in POOLINGS:
            raise ConfigError(f"{path}: pooling must be one of {POOLINGS}")
        # pgvector's halfvec holds at most 16,000 dimensions; HNSW indexes 4,000.
        if not 1 <= manifest.dimension <= 4000:
            raise ConfigError(f"{path}: dimension must be within 1..4000")
        if not 2 <= manifest.max_length <= 1_000_000:
            raise ConfigError(f"{path}: max_length must be within 2..1000000")
        return manifest

    def verify(self) -> None:
        """Check every listed file's sha256; raise ConfigError on a mismatch."""
        for name, path in (("onnx", self.onnx), ("tokenizer", self.tokenizer)):
            if not path.is_file():
                raise ConfigError(f"{self.path}: {name} file {path} is missing")
        for rel, want in self.sha256.items():
            got = sha256_file((self.path.parent / rel).resolve())
            if got != want:
                raise ConfigError(
                    f"{self.path}: {rel} has sha256 {got}, expected {want}; "
                    "delete the model folder and run `make models` again"
                )
