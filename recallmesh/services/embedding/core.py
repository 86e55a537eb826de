"""Sentence embeddings with onnxruntime: tokenise, run, pool, normalise.

No gRPC here. `OnnxEmbedder` runs the model a manifest describes:
  * tokenises with the Hugging Face fast tokenizer (`tokenizers`), truncating
    to the manifest's max_length and padding each batch to its longest text;
  * sorts a call's texts by token length and runs them in sub-batches of at
    most `max_batch` texts / `max_batch_tokens` padded tokens, closing a
    sub-batch early rather than padding short texts to a long one's length;
  * pools the token states (mean over the attention mask, or CLS) and
    L2-normalises.
Execution provider: "auto" asks for CUDA first when the installed onnxruntime
offers it and keeps whatever the created session reports in
`session.get_providers()`; the GPU wheel lists CUDA in
get_available_providers() even on machines where CUDA cannot start, so that
list is never trusted on its own.

`check_probe` is the model's self-check at start: the manifest's probe texts embedded here
must come out close to the reference build's vectors of them, or the model is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from recallmesh.embedding_models.manifest import (
    ModelManifest,
    ModelProbe,
    encode_vector,
)
from recallmesh.shared.settings import ConfigError

log = logging.getLogger(__name__)

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
PROVIDER_CHOICES = ("auto", "cpu", "cuda")
KINDS = ("query", "document")
# A model run may pad its texts to at most this multiple of their real tokens
# (plus a small absolute allowance so short texts still batch together).
PADDING_SLACK = 1.2
PADDING_ALLOWANCE = 32


def onnxruntime_distributions() -> list[str]:
    """Installed onnxruntime wheels; more than one in an environment is a broken install."""
    names = []
    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        names.append(dist)
    return names


def pool(states: np.ndarray, mask: np.ndarray, manifest: ModelManifest) -> np.ndarray:
    """Token states (batch, seq, dim) to one vector per text, as the manifest says: the
    first token's state (cls) or the mean over the attention mask, then L2-normalised
    when the manifest asks. Shared with benchmarks that run the graph elsewhere."""
    states = states.astype(np.float32)
    if manifest.pooling == "cls":
        pooled = states[:, 0, :]
    else:
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    if manifest.normalize:
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        pooled = pooled / np.clip(norms, 1e-12, None)
    return pooled


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray  # (n, dimension) float32, L2-normalised
    truncated: list[bool]  # per text: was it cut to max_length tokens


class OnnxEmbedder:
    def __init__(
        self,
        manifest: ModelManifest,
        provider: str = "auto",
        intra_op_threads: int = 0,
        max_batch: int = 32,
        max_batch_tokens: int = 2048,
    ) -> None:
        if provider not in PROVIDER_CHOICES:
            raise ValueError(f"provider must be one of {PROVIDER_CHOICES}, got {provider!r}")
        self.manifest = manifest
        self.max_batch = max_batch
        self.max_batch_tokens = max_batch_tokens
        self.tokenizer = Tokenizer.from_file(str(manifest.tokenizer))
        # The tokenizer file's own padding id (MPNet pads with <pad> = 1, although its
        # vocabulary also has a [PAD]), else [PAD], else 0.
        pad = (self.tokenizer.padding or {}).get("pad_id")
        if pad is None:
            pad = self.tokenizer.token_to_id("[PAD]")
        self.pad_id = 0 if pad is None else pad
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(manifest.max_length)

        options = ort.SessionOptions()
        if intra_op_threads > 0:
            options.intra_op_num_threads = intra_op_threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        requested = [CPU]
        if provider in ("auto", "cuda") and CUDA in ort.get_available_providers():
            requested = [CUDA, CPU]
        self.provider_note = ""
        if provider == "cuda" and CUDA not in ort.get_available_providers():
            self.provider_note = "CUDA requested but this onnxruntime build has no CUDA provider"
        self.session = ort.InferenceSession(
            str(manifest.onnx), sess_options=options, providers=requested
        )
        active = self.session.get_providers()
        self.provider = active[0] if active else CPU
        if CUDA in requested and self.provider != CUDA:
            self.provider_note = "CUDA provider listed but the session could not use it (no GPU?)"
        if self.provider_note:
            log.warning("embedding falls back to CPU: %s", self.provider_note)
        self.input_names = {i.name for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if manifest.output not in outputs:
            raise ValueError(f"model has no output {manifest.output!r} (has {outputs})")

    @property
    def producer(self) -> str:
        """What computes this embedder's vectors, e.g. 'onnxruntime 1.32.0 CPUExecutionProvider'."""
        return f"onnxruntime {ort.__version__} {self.provider}"

    def _prefixed(self, texts: list[str], kind: str) -> list[str]:
        prefix = self.manifest.query_prefix if kind == "query" else self.manifest.document_prefix
        return [prefix + t for t in texts] if prefix else list(texts)

    def encode(self, texts: list[str], kind: str) -> list[Encoding]:
        """The texts as the model sees them: prefixed, tokenised, cut to max_length."""
        return list(self.tokenizer.encode_batch(self._prefixed(texts, kind)))

    def embed(self, texts: list[str], kind: str = "query") -> Embedded:
        """One normalised vector per text, in input order. A text given more than once is
        run through the model once (an import's repeated lines, the "ok" and "thanks" of a
        conversation, several requests batched together); each place gets its vector."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        if not texts:
            return Embedded(np.zeros((0, self.manifest.dimension), np.float32), [])
        unique = list(dict.fromkeys(texts))
        if len(unique) < len(texts):
            once = self.embed(unique, kind)
            row = {text: i for i, text in enumerate(unique)}
            rows = [row[t] for t in texts]
            return Embedded(once.vectors[rows], [once.truncated[i] for i in rows])
        encodings = self.encode(texts, kind)
        truncated = [bool(e.overflowing) for e in encodings]
        out = np.empty((len(texts), self.manifest.dimension), np.float32)
        for chunk in self.plan_batches([len(e.ids) for e in encodings]):
            out[chunk] = self._run([encodings[i] for i in chunk])
        return Embedded(out, truncated)

    def plan_batches(self, lengths: list[int]) -> list[list[int]]:
        """Group text indices into model runs: sorted by token length, each run
        padded to its longest text. A run closes when it holds max_batch texts,
        when its padded size would pass max_batch_tokens, or when padding would
        exceed PADDING_SLACK of its real tokens: on CPU the model costs the
        same per token at any batch size, so padding is pure waste, and one
        long text must not drag 31 short ones to its length."""
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        runs: list[list[int]] = []
        run: list[int] = []
        real = 0
        for i in order:
            width = lengths[i]  # the longest so far: the order is ascending
            padded = (len(run) + 1) * width
            if run and (
                len(run) >= self.max_batch
                or padded > self.max_batch_tokens
                or padded > PADDING_SLACK * (real + width) + PADDING_ALLOWANCE
            ):
                runs.append(run)
                run, real = [], 0
            run.append(i)
            real += width
        if run:
            runs.append(run)
        return runs

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, np.int64)
        mask = np.zeros((len(encodings), width), np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        states: np.ndarray = self.session.run([self.manifest.output], feeds)[0]
        return pool(states, mask, self.manifest)

    def warm_up(self) -> None:
        """Run the graph once at start so the first request does not pay for it."""
        self.embed(["warm up"], "query")
        self.embed([f"warm up {i} " * 8 for i in range(min(self.max_batch, 8))], "document")


def probe_cosine(manifest: ModelManifest, embed: Callable[[list[str], str], Embedded]) -> float:
    """The lowest cosine between the probe texts' vectors computed by `embed` and the
    probe's reference vectors (raw vectors, so it holds whether or not the model normalises)."""
    assert manifest.probe is not None
    probe = manifest.probe
    got = embed(list(probe.texts), probe.kind).vectors.astype(np.float64)
    want = np.asarray(probe.vectors, np.float64)
    if got.shape != want.shape:
        raise ConfigError(f"{manifest.path}: the model gives vectors of shape {got.shape} for "
                          f"the probe texts, the probe holds {want.shape}")
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1)
    cosines = (got * want).sum(axis=1) / np.clip(norms, 1e-12, None)
    if not np.isfinite(cosines).all():
        return -1.0
    return float(cosines.min())


def _cpu_has_vnni() -> bool | None:
    """Whether this CPU has AVX-512 VNNI or AVX-VNNI; None where /proc/cpuinfo says nothing."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[-1].split())
            return bool(flags & {"avx512_vnni", "avx_vnni"})
    return None


def check_probe(manifest: ModelManifest,
                embed: Callable[[list[str], str], Embedded]) -> float | None:
    """Refuse (ConfigError) a model whose vectors here are not what the model means: the
    probe texts' lowest cosine to the reference build's vectors must reach the probe's
    min_cosine. Returns that cosine; None for a manifest without a probe (not checked)."""
    probe = manifest.probe
    if probe is None:
        log.info("the model manifest has no probe: its vectors are not checked against a "
                 "reference", extra={"model_id": manifest.model_id, "manifest": str(manifest.path)})
        return None
    cosine = probe_cosine(manifest, embed)
    if cosine >= probe.min_cosine:
        return cosine
    cpu = {True: "this CPU has VNNI",
           False: "this CPU has neither AVX-512 VNNI nor AVX-VNNI",
           None: "this CPU's features are unknown"}[_cpu_has_vnni()]
    raise ConfigError(
        f"model {manifest.model_id} ({manifest.path}) computes wrong vectors on this machine: "
        f"its probe texts come out at cosine {cosine:.3f} to the reference build's vectors, "
        f"below {probe.min_cosine} ({cpu}; precision {manifest.precision}). The usual cause is "
        "an int8 build quantized without reduce_range run on a CPU without VNNI, whose "
        "integer MatMuls saturate. Use the fp32 model (nomic-embed-text-v1.5) or an int8 build "
        "made with reduce_range (the catalogue's nomic-embed-text-v1.5-int8: delete its folder "
        "in the model cache and run `recallmesh fetch-model nomic-embed-text-v1.5-int8` again), "
        "and point RECALLMESH_EMBEDDING_MANIFEST at its manifest.json"
    )


def make_probe(embed: Callable[[list[str], str], Embedded], texts: list[str],
               kind: str = "document") -> dict[str, object]:
    """A catalogue entry's `probe`: the texts and their vectors from `embed` (run it on the
    model's reference build, e.g. the fp32 model), float16 in base64."""
    vectors = embed(texts, kind).vectors
    probe: dict[str, object] = {"kind": kind, "texts": list(texts),
                                "vectors": [encode_vector([float(x) for x in v]) for v in vectors]}
    ModelProbe.from_dict(probe, vectors.shape[1])  # what the manifest reads back
    return probe
