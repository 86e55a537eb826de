"""CUDA against CPU for recallmesh.services.embedding.core.OnnxEmbedder on one model: the
providers each
`provider=` setting ends up with, the differences between their vectors (also with TF32 off and
one text at a time), and embed() timings at 1 / 8 / 32 / 128 texts.

  python -m benchmarks.performance.cuda_parity MANIFEST [REPS]

Needs onnxruntime-gpu and a GPU. Run on the lent H200 (onnxruntime-gpu 1.31.1, CUDA 13) with the
wheel and the model carried over in parts; the numbers are in the closing note of issue 23.
"""
import statistics
import sys
import time
import traceback

import numpy as np
import onnxruntime as ort

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding import core
from recallmesh.services.embedding.core import CPU, CUDA, OnnxEmbedder

manifest = ModelManifest.load(sys.argv[1])
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
manifest.verify()
print(f"== model {manifest.model_id} dim={manifest.dimension} ({manifest.onnx})", flush=True)
print("onnxruntime", ort.__version__, ort.__file__)
print("available providers:", ort.get_available_providers(), "| get_device():", ort.get_device())
print("onnxruntime_distributions():", core.onnxruntime_distributions())

LONG = " ".join(f"Paragraph {i}: the replication log of shard {i % 7} was compacted after "
                f"{i * 13} seconds while the leader kept serving reads." for i in range(60))
DOCS = [
    "", "a", "Hello world.", "The quick brown fox jumps over the lazy dog.",
    "PostgreSQL's HNSW index trades recall for latency; ef_search controls the beam width.",
    "def embed(texts):\n    return model.run(None, {'input_ids': ids})[0]",
    "Café, naïve, résumé, Zürich — accented text and an em dash.",
    "日本語のテキストと中文文本以及한국어 텍스트.", "Emoji test 🚀🔥✨ with symbols $%^&*()",
    "1234567890 3.14159 2.71828 6.022e23", "URL: https://example.com/path?q=1&r=two#frag",
    "user@example.com wrote: please reset my password by Friday.",
    "The meeting about the Q3 budget was moved to Thursday at 14:00 in room B.",
    "Alice prefers tea over coffee and is allergic to peanuts.",
    "Kubernetes evicted the pod because the node ran out of ephemeral storage.",
    "gRPC deadlines propagate across hops; set them at the edge, not inside services.",
    "Recall@10 dropped from 0.91 to 0.84 after switching to int8 quantisation.",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong stepped out first.",
    "The mitochondria is the powerhouse of the cell. " * 3,
    "Remember: the dentist appointment is on March 3rd at 9am, bring the insurance card.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "SELECT id, embedding <=> $1 AS d FROM memories ORDER BY d LIMIT 10;",
    "Bob's birthday is on the 12th of June; he likes jazz records.",
    "The train to Lyon leaves from platform 4; tickets are in the shared folder.",
    "ERROR 2026-11-25T08:55:53Z embedding: CUDA provider unavailable, falling back to CPU",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "A very long document follows. " + LONG,  # > 512 tokens: truncated
    LONG[:1500], "short", "two words", "   leading and trailing spaces   ",
    "UPPER CASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
]
QUERIES = [
    "", "what did alice say about coffee", "when is the dentist appointment",
    "why was the pod evicted", "how does hnsw ef_search work", "who landed on the moon first",
    "budget meeting time", "bob birthday", "train platform lyon", "recall drop int8",
    "grpc deadline best practice", "password reset", "what is photosynthesis",
    "cuda fallback error", "emoji", "japanese text", "SQL query for nearest neighbours",
    "accented words", "numbers and constants", "url with query string",
    "tell me everything you remember about shard 3 compaction and leader reads",
    "x", "?", "peanut allergy", "jazz records", "mitochondria", "lazy dog",
    "python function that embeds texts", "storage eviction node", "quantisation effects",
    "leading spaces", "an unusually long query " * 20,
]
assert len(DOCS) == 32 and len(QUERIES) == 32, (len(DOCS), len(QUERIES))
POOL = DOCS + QUERIES + [f"Memory {i}: " + f"note about topic {i} " * (1 + i % 9)
                         for i in range(64)]


def make(provider, **kw):
    t0 = time.perf_counter()
    e = OnnxEmbedder(manifest, provider=provider, **kw)
    dt = time.perf_counter() - t0
    print(f"provider={provider!r}: .provider={e.provider!r} .provider_note={e.provider_note!r} "
          f"session.get_providers()={e.session.get_providers()} (init {dt:.2f}s)", flush=True)
    return e


def embed_all(e):
    d = e.embed(DOCS, "document")
    q = e.embed(QUERIES, "query")
    return np.concatenate([d.vectors, q.vectors]), d.truncated + q.truncated


def compare(name, a, b):
    diff = np.abs(a - b)
    cos = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    worst = int(np.argmin(cos))
    print(f"{name}: max_abs_diff={diff.max():.3e} mean_abs_diff={diff.mean():.3e} "
          f"min_cosine={cos.min():.9f} (1-min_cos={1 - cos.min():.3e}, text #{worst}) "
          f"docs max_abs={diff[:32].max():.3e} queries max_abs={diff[32:].max():.3e}", flush=True)


def bench(e, n, reps):
    texts = POOL[:n]
    for _ in range(3):
        e.embed(texts, "document")
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        e.embed(texts, "document")
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(e.plan_batches(
        [len(x.ids) for x in e.tokenizer.encode_batch(e._prefixed(texts, "document"))]))


emb = {}
for p in ("cuda", "cpu", "auto"):
    try:
        emb[p] = make(p)
        if hasattr(emb[p].session, "get_provider_options"):
            print("   provider options:", {k: {kk: vv for kk, vv in v.items()
                  if kk in ("device_id", "use_tf32", "cudnn_conv_algo_search",
                            "arena_extend_strategy", "enable_cuda_graph")}
                  for k, v in emb[p].session.get_provider_options().items()})
    except Exception:
        print(f"provider={p!r}: FAILED")
        traceback.print_exc()
print("auto picks CUDA:", emb.get("auto") is not None and emb["auto"].provider == CUDA)

vec = {}
for p, e in emb.items():
    vec[p], trunc = embed_all(e)
    norms = np.linalg.norm(vec[p], axis=1)
    truncated = [i for i, t in enumerate(trunc) if t]
    print(f"{p}: {vec[p].shape} finite={np.isfinite(vec[p]).all()} norms in "
          f"[{norms.min():.6f}, {norms.max():.6f}] truncated={truncated}")
if "cuda" in vec and "cpu" in vec:
    compare("CUDA vs CPU (OnnxEmbedder defaults)", vec["cuda"], vec["cpu"])
    if "auto" in vec:
        compare("auto vs CUDA", vec["auto"], vec["cuda"])
    c2 = np.concatenate([emb["cuda"].embed(DOCS, "document").vectors,
                         emb["cuda"].embed(QUERIES, "query").vectors])
    compare("CUDA run-to-run", c2, vec["cuda"])
    # one text at a time (no padding) vs the batched call, on CUDA
    texts = [(t, "document") for t in DOCS] + [(t, "query") for t in QUERIES]
    single = np.stack([emb["cuda"].embed([t], k).vectors[0] for t, k in texts])
    compare("CUDA one-by-one vs CUDA batched", single, vec["cuda"])
    try:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        e = emb["cuda"]
        notf = OnnxEmbedder.__new__(OnnxEmbedder)
        notf.__dict__.update(e.__dict__)
        notf.session = ort.InferenceSession(str(manifest.onnx), sess_options=opts,
                                            providers=[(CUDA, {"use_tf32": "0"}), CPU])
        v0 = embed_all(notf)[0]
        compare("CUDA use_tf32=0 vs CPU", v0, vec["cpu"])
        compare("CUDA use_tf32=0 vs CUDA default", v0, vec["cuda"])
    except Exception:
        traceback.print_exc()

print(f"\ntimings: embed(N texts, 'document'), 3 warm-up calls, median of {REPS}")
print(f"{'N':>5} {'runs':>5} {'CUDA ms':>10} {'CPU ms':>10} {'CPU/CUDA':>9} {'CUDA texts/s':>13}")
for n in (1, 8, 32, 128):
    try:
        tg, runs = bench(emb["cuda"], n, REPS)
        tc, _ = bench(emb["cpu"], n, REPS)
        print(f"{n:>5} {runs:>5} {tg * 1e3:>10.2f} {tc * 1e3:>10.2f} {tc / tg:>9.1f} "
              f"{n / tg:>13.0f}", flush=True)
    except Exception:
        traceback.print_exc()
