"""Every benchmark by name: `python -m benchmarks <name> [args]` (`make bench NAME=<name>
ARGS="..."`); `python -m benchmarks` lists them.

Each entry says what it reads (datasets under BENCH_DATASETS, default ../shared/datasets), the
harness configurations it runs (benchmarks/harness/configs.py), the catalogue models it fetches
first, the report files it writes and how it runs: a module's `main(argv)` with default
arguments put before the caller's (argparse lets a later option win, so `--report-to X`
overrides a default), or a recipe below that chains several steps (the served runs over each
dev split, the candidate pools the replays read). Detail (per-query results, pools, raw
numbers) goes under benchmarks/results/, which git ignores; what is committed under
benchmarks/reports/ stays inside benchmarks/tests/unit/test_report_budget.py's budget.

Retired benchmarks and what they concluded: docs/decisions/.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.harness.data import dataset_path
from benchmarks.harness.metrics import primary

REPORTS = Path("benchmarks/reports")
RESULTS = Path("benchmarks/results")
SETS = ("locomo", "scifact", "longmemeval")
PEERS = ("peer_bm25", "peer_lancedb_fts", "peer_lancedb_vector", "peer_lancedb_hybrid",
         "peer_pgvector_hybrid")
INT8 = "nomic-embed-text-v1.5-int8"


@dataclass(frozen=True)
class Benchmark:
    name: str
    description: str
    run: Callable[[list[str]], None]
    reports: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    models: tuple[str, ...] = field(default=())

    def main(self, argv: Sequence[str]) -> None:
        for model in () if {"-h", "--help"} & set(argv) else self.models:
            fetch(model)
        self.run(list(argv))


# --- steps every recipe shares ------------------------------------------------------------

def datasets_dir() -> Path:
    return Path(os.environ.get("BENCH_DATASETS", "../shared/datasets"))


def python(*args: str, env: dict[str, str] | None = None) -> None:
    """One step in its own process (each starts and stops its own stack), like make did."""
    print("+", " ".join(args), flush=True)
    subprocess.run([sys.executable, *args], check=True, env={**os.environ, **(env or {})})


def fetch(model: str) -> None:
    python("-m", "recallmesh.embedding_models.fetch", model)


def manifest_env(model: str) -> dict[str, str]:
    """RECALLMESH_EMBEDDING_MANIFEST for a catalogue model in the model cache."""
    from recallmesh.embedding_models.manifest import model_cache_dir

    return {"RECALLMESH_EMBEDDING_MANIFEST": str(model_cache_dir() / model / "manifest.json")}


def metric(dataset: str) -> str:
    return primary(dataset)


def serve(dataset: str, out: Path, configs: Sequence[str] | None = None,
          ingest_batch: int | None = None, env: dict[str, str] | None = None,
          unanswerable: bool = False) -> None:
    """`python -m benchmarks run` of `configs` (None: the harness's default, every one) on a
    dev split, per-query results to `out`."""
    python("-m", "benchmarks", "run", "--dataset", str(dataset_path(dataset)), "--out",
           str(out), *(["--configs", ",".join(configs)] if configs else []),
           *(["--ingest-batch", str(ingest_batch)] if ingest_batch else []),
           *(["--unanswerable"] if unanswerable else []), env=env)


def compare(out: Path, report: Path, dataset: str, summary: Path | None = None,
            baseline: str | None = None) -> None:
    """`python -m benchmarks compare`, appended to `report`, the summary JSON to `summary`."""
    python("-m", "benchmarks", "compare", str(out), "--metric", metric(dataset),
           "--append-to", str(report), *(["--baseline", baseline] if baseline else []),
           *(["--summary-to", str(summary)] if summary else []))


def header(report: Path, text: str) -> None:
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(text)


def served_sets(sets: Sequence[str], configs: Sequence[str], report: Path, title: str,
                results: Callable[[str], Path], summary: Callable[[str], Path],
                baseline: str | None = "default", ingest_batch: int | None = None,
                env: dict[str, str] | None = None) -> None:
    """The loop make pasted five times: a header, then per dev split one served run and its
    comparison appended to the report (the metric: nDCG@10 on SciFact, recall@10 elsewhere)."""
    header(report, title)
    for dataset in sets:
        serve(dataset, results(dataset), configs, ingest_batch, env)
        compare(results(dataset), report, dataset, summary(dataset), baseline)


def pools(sets: Sequence[str], limits: dict[str, int]) -> list[Path]:
    """Each split's candidate pool (benchmarks/replay/pool.py), dumped through the stack when
    missing (LongMemEval: ~30 min; a limit dumps only the set's first N queries)."""
    paths = []
    for dataset in sets:
        path = RESULTS / dataset / "context_pool.json"
        if not path.exists():
            limit = limits.get(dataset) or os.environ.get(f"POOL_LIMIT_{dataset}")
            python("-m", "benchmarks.replay.context_sweep", "dump", "--dataset",
                   str(dataset_path(dataset)), "--out", str(path),
                   *(["--limit", str(limit)] if limit else []))
        paths.append(path)
    return paths


# The sets the default is decided on (benchmarks/replay/decision.py) and the relevance estimate
# fitted on (benchmarks/quality/relevance.py): the dev splits and the sets this repository
# ships; and the cut of each that a 2-core machine embeds and dumps in minutes (the first N
# scored questions; SciFact's corpus sampled as the harness's --corpus-sample).
# agent_tasks_dev: task prompts (issue 66); its test family (agent_tasks_test) is never among
# them, only reported (`python -m benchmarks agent-tasks`).
EVIDENCE_SETS = ("locomo", "longmemeval", "scifact", "madial_en", "madial_zh", "xquad_en",
                 "xquad_de", "xquad_zh", "agent_tasks_dev")
SEVERAL_NAMESPACES = ("locomo", "longmemeval", "madial_en", "madial_zh",  # pool.dump --foreign
                      "agent_tasks_dev", "agent_tasks_test")
# The corpus each set's questions are also asked of, which holds nothing on their subject
# (pool.add_elsewhere): encyclopaedia paragraphs for personal memories, a child's diary for the
# rest.
ELSEWHERE = {"locomo": "xquad_en", "longmemeval": "xquad_en", "madial_en": "xquad_en",
             "madial_zh": "xquad_zh", "scifact": "madial_en", "xquad_en": "madial_en",
             "xquad_de": "madial_en", "xquad_zh": "madial_zh", "agent_tasks_dev": "xquad_en",
             "agent_tasks_test": "xquad_en"}
EVIDENCE_CUTS = {"longmemeval": {"limit": 50}, "scifact": {"limit": 400, "corpus_sample": 1500},
                 **{f"xquad_{lang}": {"limit": 400} for lang in ("en", "de", "zh")}}


def evidence_pools(sets: Sequence[str]) -> list[Path]:
    """Each set's pool for the decision and the relevance estimate (RESULTS/<set>/
    decision_pool.json), its vectors embedded and the pool dumped when missing; a set without
    a cut is dumped with its unanswerable questions too."""
    paths = []
    for dataset in sets:
        path = RESULTS / dataset / "decision_pool.json"
        cut = EVIDENCE_CUTS.get(dataset, {})
        if not path.exists():
            python("-m", "benchmarks", "embed-store", "--sets", dataset, "--concepts", "none",
                   *(a for k, v in cut.items() for a in (f"--{k.replace('_', '-')}",
                                                         f"{dataset}={v}")))
            python("-m", "benchmarks.replay.context_sweep", "dump", "--dataset",
                   str(dataset_path(dataset)), "--out", str(path),
                   *(a for k, v in cut.items() for a in (f"--{k.replace('_', '-')}", str(v))),
                   *([] if cut else ["--unanswerable"]),
                   *(["--foreign"] if dataset in SEVERAL_NAMESPACES else []))
        if "elsewhere" not in json.loads(path.read_text()):
            python("-m", "benchmarks.replay.context_sweep", "elsewhere", "--pool", str(path),
                   "--dataset", str(dataset_path(dataset)), "--other",
                   str(dataset_path(ELSEWHERE[dataset])),
                   *(a for k, v in cut.items() for a in (f"--{k.replace('_', '-')}", str(v))))
        paths.append(path)
    return paths


def evidence(name: str, mod: str, *extra: str) -> Callable[[list[str]], None]:
    """A replay over EVIDENCE_SETS' pools (embedded and dumped first when missing)."""
    def run(argv: list[str]) -> None:
        parser = recipe_parser(name, f"{mod} over the evidence sets' pools")
        parser.add_argument("--sets", type=comma, default=list(EVIDENCE_SETS))
        args, rest = parser.parse_known_args(argv)
        paths = ",".join(str(p) for p in evidence_pools(args.sets))
        importlib.import_module(mod).main([
            *extra, "--pools", paths, "--json-to", str(REPORTS / f"{name}.json"),
            "--report-to", str(REPORTS / f"{name}.md"), *rest])
    return run


# The agent-task set's splits: the dev split, and the test families reported apart (issue 66).
AGENT_TASK_SETS = ("agent_tasks_dev", "agent_tasks_test")


def context_needs(argv: list[str]) -> None:
    """context-needs over the agent-task pools (embedded and dumped first when missing)."""
    evidence("context-needs", "benchmarks.quality.context_needs")(
        ["--sets", ",".join(AGENT_TASK_SETS), *argv])


EVIDENCE_SERVED = ("default", "default_previous", "calibrated_lw0.3", "peer_lancedb_hybrid")


def evidence_served(argv: list[str]) -> None:
    parser = recipe_parser("evidence-served", "The default, the earlier defaults and LanceDB "
                           "hybrid served through the stack on the evidence sets, cut as their "
                           "pools are (the per-query runs the decision table compares peers "
                           "with) -> evidence-served.md")
    parser.add_argument("--sets", type=comma, default=list(EVIDENCE_SETS))
    parser.add_argument("--configs", type=comma, default=list(EVIDENCE_SERVED))
    args = parser.parse_args(argv)
    report = REPORTS / "evidence-served.md"
    header(report, "# The default, the earlier defaults and LanceDB hybrid, served on the "
           "evidence sets\n\nGenerated by `python -m benchmarks evidence-served`: each set "
           "loaded through the real stack (vectors from the on-disk vector store), cut as its "
           "pool (benchmarks/registry.py EVIDENCE_CUTS), every configuration on the same stored "
           "vectors; Δ = each minus `default`. Clusters as in decision.md.\n")
    for dataset in args.sets:
        cut = EVIDENCE_CUTS.get(dataset, {})
        python("-m", "benchmarks", "run", "--dataset", str(dataset_path(dataset)), "--out",
               str(RESULTS / dataset), "--configs", ",".join(args.configs),
               *(a for k, v in cut.items() for a in (f"--{k.replace('_', '-')}", str(v))))
        compare(RESULTS / dataset, report, dataset, None, "default")


def comma(raw: str) -> list[str]:
    return [part for part in raw.split(",") if part]


def limits(raw: str) -> dict[str, int]:
    pairs = [part.split("=", 1) for part in comma(raw)]
    return {name: int(n) for name, n in pairs}


def recipe_parser(name: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"python -m benchmarks {name}", description=description)


def module(name: str, *defaults: str) -> Callable[[list[str]], None]:
    """A benchmark module's main(argv), `defaults` first (imported only when run)."""
    def run(argv: list[str]) -> None:
        importlib.import_module(name).main([*defaults, *argv])
    return run


# --- recipes ------------------------------------------------------------------------------

RETRIEVAL_LARGE = (
    "default", "default_previous", "default_no_time", "default_no_intent", "default_lw1",
    "default_lw1.7", "lexical", "lexical_bm25", "lexical_bm25_tuned", "vector", "hybrid_rrf",
    "hybrid_rrf_exact", "hybrid_cc", "hybrid_cc_bm25", "hybrid_cc_bm25t", "hybrid_cc_bm25t_ctx",
    "hybrid_cc_bm25t_l1.7", "hybrid_bm25t_d20", *PEERS)


def retrieval(argv: list[str]) -> None:
    parser = recipe_parser("retrieval", "Dev LoCoMo, every configuration (the harness's "
                           "default list) -> retrieval.md + locomo.json; --all adds SciFact and "
                           "LongMemEval (RETRIEVAL_LARGE), the headline, the cross-validation "
                           "and the behaviour suite (what `make bench-all` did).")
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    report = REPORTS / "retrieval.md"
    serve("locomo", RESULTS / "locomo")
    header(report, subprocess.run([sys.executable, "-m", "benchmarks.quality.report_header"],
                                  check=True, capture_output=True, text=True).stdout)
    compare(RESULTS / "locomo", report, "locomo", REPORTS / "locomo.json", baseline=None)
    if not args.all:
        return
    for dataset in ("scifact", "longmemeval"):
        serve(dataset, RESULTS / dataset, RETRIEVAL_LARGE)
        compare(RESULTS / dataset, report, dataset, REPORTS / f"{dataset}.json", baseline=None)
    for name in ("headline", "cross-validation", "behaviour"):
        BENCHMARKS[name].main([])


DEFAULT_CONFIGS = ("default", "default_previous", "calibrated_lw0.5", "hybrid_cc_bounded",
                   "hybrid_rrf", "lexical", "vector", *PEERS)


def default(argv: list[str]) -> None:
    parser = recipe_parser("default", "The default served next to the previous default, the "
                           "other fusion methods and the peers, Δ against `default`.")
    parser.add_argument("--sets", type=comma, default=["locomo"],
                        help="dev splits (default locomo; SciFact and LongMemEval take hours)")
    args = parser.parse_args(argv)
    served_sets(args.sets, DEFAULT_CONFIGS, REPORTS / "default.md",
                "# The default against the previous default and the peers (served)\n\n"
                "Generated by `python -m benchmarks default`: every configuration through the "
                "real stack on the same load;\nΔ = each configuration minus `default`. "
                "Configurations: `python -m benchmarks configs`.\n\n",
                lambda d: RESULTS / d, lambda d: REPORTS / f"default-{d}.json")


SERVED_CONFIGS = ("default", "peer_lancedb_hybrid", "peer_bm25", "peer_pgvector_hybrid")


def served(argv: list[str]) -> None:
    parser = recipe_parser("served", "The default and the hybrid peers served on every dev "
                           "split (issue 42's check of the replay: the peers' per-query results "
                           "are what the cross-validation compares with).")
    parser.add_argument("--sets", type=comma, default=list(SETS))
    args = parser.parse_args(argv)
    served_sets(args.sets, SERVED_CONFIGS, REPORTS / "served.md",
                "# The default and the peers, served on the dev splits\n\n"
                "Generated by `python -m benchmarks served`: each split loaded once through the "
                "real stack (vectors from the on-disk vector store), `default` and the peers on "
                "the same stored vectors; Δ = each minus `default`. On LongMemEval every system "
                "is also asked for 50 hits, for the official session-level recall.\n\n",
                lambda d: RESULTS / d, lambda d: REPORTS / f"served-{d}.json")


MODEL_CONFIGS = ("default", "default_no_time", "default_lw1", "default_lw1.7", "lexical",
                 "vector", "hybrid_rrf", "hybrid_cc_bm25t", *PEERS)


def model(argv: list[str]) -> None:
    parser = recipe_parser("model", "Another catalogue model through the real stack "
                           "(RECALLMESH_EMBEDDING_MANIFEST), next to the peers on its vectors, "
                           "then its headline.")
    parser.add_argument("--model", default="all-mpnet-base-v2")
    parser.add_argument("--sets", type=comma, default=["locomo", "scifact"])
    parser.add_argument("--configs", type=comma, default=list(MODEL_CONFIGS))
    args = parser.parse_args(argv)
    fetch(args.model)
    root = RESULTS / "models" / args.model
    served_sets(args.sets, args.configs, REPORTS / f"model-{args.model}.md",
                f"# {args.model} through the real stack\n\nGenerated by `python -m benchmarks "
                f"model --model {args.model}` (RECALLMESH_EMBEDDING_MANIFEST pointed at it; "
                "every\nother setting is the shipped default). The peers rank the same stored "
                "vectors. Why and what it\ncosts: "
                "docs/operations/embedding-model.md#which-embedding-model.\n\n",
                lambda d: root / d, lambda d: REPORTS / f"{d}-{args.model}.json",
                baseline=None, ingest_batch=100, env=manifest_env(args.model))
    python("-m", "benchmarks.quality.headline", "--results", str(root), "--report-to",
           str(REPORTS / f"model-{args.model}-headline.md"), "--json-to",
           str(REPORTS / f"headline-{args.model}.json"), "--source",
           f"`python -m benchmarks model --model {args.model}` from the runs in "
           f"benchmarks/reports/model-{args.model}.md")


def int8(argv: list[str]) -> None:
    parser = recipe_parser("int8", "The default model against its int8 build in one process: "
                           "query latency, document throughput, cosine; then the vector leg's "
                           "rankings query by query on the dev splits.")
    parser.parse_args(argv)
    python("-m", "benchmarks.performance.embedding_precision", "--report-to",
           str(REPORTS / "embedding-int8.md"), "--json", str(REPORTS / "embedding-int8.json"))
    python("-m", "benchmarks.replay.vector_precision", "--datasets", str(datasets_dir()),
           "--report-to", str(REPORTS / "embedding-int8-vectors.md"),
           "--json", str(REPORTS / "embedding-int8-vectors.json"))


def int8_quality(argv: list[str]) -> None:
    parser = recipe_parser("int8-quality", "int8 against fp32 through the real stack, paired "
                           "per query: each split loaded twice (once per model), `<config>@int8` "
                           "paired with `<config>`.")
    parser.add_argument("--sets", type=comma, default=["locomo"],
                        help="dev splits (default locomo; SciFact and LongMemEval take hours "
                        "in fp32 on 2 cores)")
    parser.add_argument("--configs", type=comma,
                        default=["default", "vector", "peer_lancedb_hybrid"])
    args = parser.parse_args(argv)
    report = REPORTS / "embedding-int8-quality.md"
    header(report, "# nomic-embed-text-v1.5: int8 against fp32 through the real stack\n\n"
           f"Generated by `python -m benchmarks int8-quality --sets {','.join(args.sets)}`: each "
           "dev split loaded twice into its own stack, once per model "
           "(RECALLMESH_EMBEDDING_MANIFEST; every other setting the shipped default), the same "
           "configurations on each. `<config>@int8` is the int8 run, paired per query with the "
           "fp32 run (benchmarks/quality/model_pair.py); its latency comes from its own run and "
           "is not comparable.\n\n")
    for dataset in args.sets:
        root = RESULTS / "int8" / dataset
        serve(dataset, root / "fp32", args.configs, ingest_batch=100)
        serve(dataset, root / "int8", args.configs, ingest_batch=100, env=manifest_env(INT8))
        python("-m", "benchmarks.quality.model_pair", "--base", str(root / "fp32"), "--other",
               str(root / "int8"), "--label", "int8", "--into", str(root / "paired"))
        compare(root / "paired", report, dataset,
                REPORTS / f"embedding-int8-quality-{dataset}.json", baseline="default")


RACE_MODELS = ("nomic-embed-text-v1.5", INT8, "all-mpnet-base-v2", "all-MiniLM-L6-v2")
RACE_LABELS = {INT8: "int8", "all-mpnet-base-v2": "mpnet", "all-MiniLM-L6-v2": "minilm"}
RACE_CONFIGS = ("default", "lexical", "vector", "peer_bm25", "peer_lancedb_hybrid",
                "peer_pgvector_hybrid")
# The graph leg is off by default (docs/decisions/0004): concepts change none of the race's
# answers, and spaCy's extraction (about 57 LongMemEval turns/s on one core) would be most of a
# load's time. The speed benchmark keeps the shipped extractor.
RACE_ENV = {"RECALLMESH_CONCEPT_EXTRACTOR": "none"}


def model_race(argv: list[str]) -> None:
    parser = recipe_parser("models", "The embedding model race: each model's vectors filled "
                           "into the vector store, each dev split served through the stack "
                           "with the peers on the same vectors, paired per query against the "
                           "first model; then the speed benchmark of every model and the "
                           "Pareto picture.")
    parser.add_argument("--models", type=comma, default=list(RACE_MODELS))
    parser.add_argument("--sets", type=comma, default=list(SETS),
                        help="the first model's splits (default all three)")
    parser.add_argument("--other-sets", type=comma, default=["locomo"],
                        help="the other models' splits (default locomo: on 2 cores the others "
                        "embed LongMemEval and SciFact in hours)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="serve again the splits that "
                        "already have every configuration's results (kept by default)")
    args = parser.parse_args(argv)
    first, root = args.models[0], RESULTS / "race"
    for name in args.models:
        fetch(name)
        sets = [d for d in (args.sets if name == first else args.other_sets)
                if args.fresh or not all((root / name / d / f"{c}.json").is_file()
                                         for c in RACE_CONFIGS)]
        if not sets:
            continue
        python("-m", "benchmarks", "embed-store", "--sets", ",".join(sets), "--concepts",
               "none", env=manifest_env(name))
        for dataset in sets:
            shutil.rmtree(root / name / dataset, ignore_errors=True)
            serve(dataset, root / name / dataset, RACE_CONFIGS,
                  env={**manifest_env(name), **RACE_ENV}, unanswerable=True)
    report = REPORTS / "models.md"
    header(report, "# The embedding model race (served)\n\nGenerated by `python -m benchmarks "
           f"models --models {','.join(args.models)}`: every split served through the real "
           "stack per model (RECALLMESH_EMBEDDING_MANIFEST, memory vectors from the vector "
           "store, queries embedded live), the peers on the same stored vectors; "
           "`<config>@<label>` is another model's run paired per query with the first model's "
           "(benchmarks/quality/model_pair.py). Latency in these tables comes from each run "
           "and compares only within one model's rows; the speed table below compares models.\n\n")
    for dataset in args.sets:
        paired = root / "paired" / dataset
        shutil.rmtree(paired, ignore_errors=True)
        others = [m for m in args.models[1:] if (root / m / dataset).is_dir()]
        if others:
            python("-m", "benchmarks.quality.model_pair", "--base", str(root / first / dataset),
                   *(arg for other in others for arg in (
                       "--other", str(root / other / dataset),
                       "--label", RACE_LABELS.get(other, other))), "--into", str(paired))
        compare(paired if others else root / first / dataset, report, dataset,
                REPORTS / f"models-{dataset}.json", baseline="default")
    if args.skip_speed:
        return
    python("-m", "benchmarks.performance.speed", "--models", ",".join(args.models),
           "--report-to", str(REPORTS / "speed.md"), "--json", str(RESULTS / "speed.json"))
    table = RESULTS / "pareto.md"
    python("-m", "benchmarks.quality.pareto", "--summary", str(REPORTS / "models-locomo.json"),
           "--speed", str(RESULTS / "speed.json"), "--labels",
           ",".join(f"{m}={label}" for m, label in RACE_LABELS.items()), "--png",
           str(REPORTS / "models-pareto.png"), "--title",
           "LoCoMo dev recall@10 against one-client p95 (5,000 memories)", "--table-to",
           str(table))
    with open(report, "a", encoding="utf-8") as f:
        f.write("\n## Pareto: LoCoMo recall@10 against p95 (speed benchmark)\n\n"
                "![Pareto](models-pareto.png)\n\n" + table.read_text())


def replay(name: str, mod: str, json_name: str, report_name: str, *extra: str,
           help_text: str = "") -> Callable[[list[str]], None]:
    """A replay over the dev splits' candidate pools (dumped first when missing)."""
    def run(argv: list[str]) -> None:
        parser = recipe_parser(name, help_text)
        parser.add_argument("--sets", type=comma, default=list(SETS))
        parser.add_argument("--pool-limit", type=limits, default={},
                            help="SET=N[,...]: dump only the set's first N queries "
                            "(also POOL_LIMIT_<set>=N)")
        args, rest = parser.parse_known_args(argv)
        paths = ",".join(str(p) for p in pools(args.sets, args.pool_limit))
        datasets = [] if mod.endswith("context_sweep") else ["--datasets", str(datasets_dir())]
        importlib.import_module(mod).main([
            *extra, "--pools", paths, *datasets, "--json-to", str(REPORTS / json_name),
            "--report-to", str(REPORTS / report_name), *rest])
    return run


def model_replay(argv: list[str]) -> None:
    models = next((a.split("=", 1)[1] for a in argv if a.startswith("--models=")), None)
    if models is None and "--models" in argv:
        models = argv[argv.index("--models") + 1]
    for name in [] if {"-h", "--help"} & set(argv) else comma(models or "all-MiniLM-L6-v2"):
        fetch(name)
    replay("model-replay", "benchmarks.replay.model_replay", "model_replay.json",
           "model-replay.md", *([] if models else ["--models", "all-MiniLM-L6-v2"]),
           help_text="Catalogue models against the served one on the pools, exact vectors "
           "(--models A,B; default all-MiniLM-L6-v2).")(argv)


def recall_latency(argv: list[str]) -> None:
    run = module("benchmarks.performance.recall_latency")
    for legs in ([] if argv else ["lexical", "lexical,vector"]):
        run(["--legs", legs])
    if argv:
        run(argv)


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("retrieval", "retrieval quality on dev LoCoMo, every configuration and peer "
              "(--all: + SciFact, LongMemEval, headline, cross-validation, behaviour)",
              retrieval, ("retrieval.md", "locomo.json", "scifact.json", "longmemeval.json"),
              SETS, RETRIEVAL_LARGE),
    Benchmark("headline", "`default` against lexical, hybrid_rrf and the best peer, targets "
              "checked, from retrieval's per-query results",
              module("benchmarks.quality.headline", "--report-to", "benchmarks/reports/"
                     "headline.md", "--json-to", "benchmarks/reports/headline.json"),
              ("headline.md", "headline.json"), SETS, ("default", "lexical", "hybrid_rrf")),
    Benchmark("served", "the default and the hybrid peers served on all three dev splits "
              "(per-query results the cross-validation compares with)", served,
              ("served.md",), SETS, SERVED_CONFIGS),
    Benchmark("default", "the default served next to the previous default, other fusion "
              "methods and the peers (--sets locomo)", default,
              ("default.md", "default-locomo.json"), ("locomo",), DEFAULT_CONFIGS),
    Benchmark("behaviour", "what an agent's developer checks (code words, ids, sensitive, "
              "paraphrase, superseded, typo, noise, German/Chinese/Japanese)",
              module("benchmarks.behaviour.suite", "--configs", "default,default_previous,"
                     "calibrated_lw0.5,hybrid_cc_bounded,hybrid_rrf", "--report-to",
                     "benchmarks/reports/behaviour.md", "--json",
                     "benchmarks/results/behaviour.json"),
              ("behaviour.md",), (), ("default", "default_previous", "calibrated_lw0.5",
                                      "hybrid_cc_bounded", "hybrid_rrf")),
    Benchmark("leak", "how often a secret comes in the first 3 / 10 hits of harmless and "
              "asking questions (issue 39)",
              module("benchmarks.behaviour.leak", "--report-to", "benchmarks/reports/leak.md",
                     "--json", "benchmarks/results/leak.json"), ("leak.md",)),
    Benchmark("floor", "issue 39's score calibration and relevance floor (subcommands: "
              "cosine-floor, fit, curve, report, choose)", module("benchmarks.quality.floor"),
              ("floor.md", "floor.json", "floor.png"), SETS, ("default", "default_no_floor")),
    Benchmark("context-sweep", "context propagation, lexical weight and leg depth replayed "
              "on the dev pools (pools dumped first when missing)",
              replay("context-sweep", "benchmarks.replay.context_sweep", "context_sweep.json",
                     "context.md", "sweep", "--detail-to",
                     "benchmarks/results/context_sweep.json"),
              ("context.md", "context_sweep.json"), SETS, ("hybrid_cc_bm25t",)),
    Benchmark("cross-validation", "the levers by cross-validation on the dev pools: in-sample "
              "and out-of-fold effects, against the peers' served runs",
              replay("cross-validation", "benchmarks.replay.cross_validation",
                     "cross_validation.json", "cross-validation.md", "--peers",
                     "benchmarks/results"),
              ("cross-validation.md", "cross_validation.json"), SETS,
              ("hybrid_cc_bm25t", "hybrid_rrf", "peer_bm25", "peer_lancedb_hybrid")),
    Benchmark("decision", "the default ranker by the decision rule: every earlier default "
              "and ranker family by cluster, tuned out of fold, on the dev splits and the "
              "sets this repository ships (docs/decisions/0012)",
              evidence("decision", "benchmarks.replay.decision", "--peers", "benchmarks/results"),
              ("decision.md", "decision.json"), EVIDENCE_SETS, ("hybrid_cc_bm25t",)),
    Benchmark("learned-ranking", "a logistic regression over the legs' evidence, fitted out "
              "of fold, against the shipped default and the vector leg alone on the evidence "
              "sets' pools (issue 66)",
              evidence("learned-ranking", "benchmarks.replay.learned"),
              ("learned-ranking.md", "learned-ranking.json"), EVIDENCE_SETS, ("hybrid_cc_bm25t",)),
    Benchmark("evidence-served", "the default, the earlier defaults and LanceDB hybrid "
              "served on the evidence sets (as cut for the decision)", evidence_served,
              ("evidence-served.md",), EVIDENCE_SETS, EVIDENCE_SERVED),
    Benchmark("relevance", "the relevance estimate a hit carries: fitted out of fold, its "
              "reliability per split and the floor it supports (--write-catalogue ships it)",
              evidence("relevance", "benchmarks.quality.relevance"),
              ("relevance.md", "relevance.json"), EVIDENCE_SETS, ("hybrid_cc_bm25t",)),
    Benchmark("context-curve", "what Context packs, by rule: the answer kept against the items "
              "packed and the off-topic questions with an empty block, on the evidence sets "
              "(docs/decisions/0014)",
              evidence("context_curve", "benchmarks.quality.context_curve"),
              ("context_curve.md", "context_curve.json"), EVIDENCE_SETS, ("hybrid_cc_bm25t",)),
    Benchmark("context-needs", "what a task needs against what the legs give: the ranking's "
              "ceiling, Context as served and the floors that empty prompts about nothing "
              "stored, on the agent-task pools (issue 67)", context_needs,
              ("context-needs.md", "context-needs.json"), AGENT_TASK_SETS, ("hybrid_cc_bm25t",)),
    Benchmark("lever-replay", "levers replayed on the dev pools with exact vectors (speaker "
              "boost, PRF, embedding hop, chunks, routed weight, time windows)",
              replay("lever-replay", "benchmarks.replay.lever_replay", "lever_replay.json",
                     "levers.md"), ("levers.md", "lever_replay.json"), SETS,
              ("hybrid_cc_bm25t",)),
    Benchmark("model-replay", "catalogue models against the served one, replayed on the dev "
              "pools with exact vectors (--models A,B)", model_replay,
              ("model-replay.md", "model_replay.json"), SETS),
    Benchmark("model", "another catalogue model through the real stack, next to the peers "
              "(--model NAME --sets locomo,scifact)", model,
              ("model-<model>.md", "model-<model>-headline.md", "<set>-<model>.json",
               "headline-<model>.json"), ("locomo", "scifact"), MODEL_CONFIGS),
    Benchmark("concept-names", "concept-name similarities under the served model (the graph "
              "leg's merge threshold)",
              module("benchmarks.quality.concept_names", "--report-to",
                     "benchmarks/reports/concept-names.md"), ("concept-names.md",)),
    Benchmark("int8", "nomic-embed-text-v1.5 against its int8 build in process: latency, "
              "throughput, cosine, the vector leg's rankings", int8,
              ("embedding-int8.md", "embedding-int8.json", "embedding-int8-vectors.md",
               "embedding-int8-vectors.json"), ("locomo", "scifact"), models=(INT8,)),
    Benchmark("int8-quality", "int8 against fp32 through the real stack, paired per query "
              "(--sets locomo --configs default,vector,peer_lancedb_hybrid)", int8_quality,
              ("embedding-int8-quality.md", "embedding-int8-quality-<set>.json"), ("locomo",),
              ("default", "vector", "peer_lancedb_hybrid"), models=(INT8,)),
    Benchmark("models", "the embedding model race: every model served on the dev splits with "
              "the peers, paired per query; speed per model; the Pareto picture "
              "(--models A,B --sets --other-sets --skip-speed)", model_race,
              ("models.md", "models-<set>.json", "models-pareto.png", "speed.md"), SETS,
              RACE_CONFIGS, models=RACE_MODELS[1:]),
    Benchmark("embed-store", "fill the on-disk vector store for dev splits in process, large "
              "batches (--sets locomo,longmemeval,scifact --model NAME), or `import` vectors "
              "computed on a GPU machine", module("benchmarks.harness.vector_prefill")),
    Benchmark("embedding", "embedding throughput at batch 1/8/32/128 and single-query latency "
              "through gRPC", module("benchmarks.performance.embedding_throughput")),
    Benchmark("vector", "indexer throughput, vector-leg latency at 5k / 100k memories, HNSW "
              "recall@10 against exact search", module("benchmarks.performance.vector_leg"),
              (), ("locomo", "longmemeval")),
    Benchmark("vector-plan", "the vector leg's exact scan against HNSW by namespace size "
              "(RECALLMESH_VECTOR_EXACT_MAX's evidence), HNSW recall at the largest size",
              module("benchmarks.performance.vector_leg", "--sizes", "1000,2000,5000,10000,20000",
                     "--ks", "10", "--searches", "200", "--recall-sizes", "largest",
                     "--ef-sweep", "200", "--datasets", "longmemeval,locomo",
                     "--report-to", "benchmarks/reports/vector-plan.md",
                     "--json", "benchmarks/results/vector_plan.json"),
              ("vector-plan.md",), ("longmemeval", "locomo")),
    Benchmark("stages", "where a recall's time goes, per stage, fp32 and int8 side by side "
              "(--memories 5000)",
              module("benchmarks.performance.recall_stages", "--memories", "5000", "--models",
                     f"nomic-embed-text-v1.5,{INT8}", "--report-to",
                     "benchmarks/reports/recall-stages.md", "--json",
                     "benchmarks/results/recall_stages.json"),
              ("recall-stages.md",), ("locomo", "longmemeval"), models=(INT8,)),
    Benchmark("ingest", "writes through StoreBatch against the model's own rate on the same "
              "texts, shipped and with concept extraction on (issue 68)",
              module("benchmarks.performance.ingest", "--report-to",
                     "benchmarks/reports/ingest.md", "--json", "benchmarks/results/ingest.json"),
              ("ingest.md",), ("locomo", "longmemeval")),
    Benchmark("query-levers", "the query embedding's levers on this CPU: one intra-op "
              "thread, onnxruntime's transformer fusions, against the shipped session, each "
              "alone in a process of its own, in rounds, with their vectors' cosine to the "
              "shipped ones (issue 68)",
              module("benchmarks.performance.query_levers", "--report-to",
                     "benchmarks/reports/query-levers.md", "--json",
                     "benchmarks/results/query_levers.json"),
              ("query-levers.md",), ("locomo", "longmemeval")),
    Benchmark("http-overhead", "what the HTTP/JSON API and the LangChain / LlamaIndex "
              "retrievers cost over a gRPC Recall, asked in turns (issue 69)",
              module("benchmarks.performance.http_overhead", "--report-to",
                     "benchmarks/reports/http-overhead.md", "--json",
                     "benchmarks/results/http_overhead.json"),
              ("http-overhead.md",), ("locomo", "longmemeval")),
    Benchmark("speed", "issue 26's speed tables per model: latency against LanceDB and the "
              "single-SQL hybrid, 8/32 clients, ingest, query cache, stages",
              module("benchmarks.performance.speed", "--models",
                     f"nomic-embed-text-v1.5,{INT8}", "--report-to",
                     "benchmarks/reports/speed.md", "--json", "benchmarks/results/speed.json"),
              ("speed.md",), ("locomo", "longmemeval"), ("default", "lexical_bm25", "vector"),
              models=(INT8,)),
    Benchmark("scale", "a million memories bulk-loaded: load time, sizes, recall latency, HNSW "
              "recall (--memories 100000 --corpus-duplicates --report-to ... for the 100k "
              "reports)",
              module("benchmarks.performance.scale", "--report-to",
                     "benchmarks/reports/scale.md", "--json", "benchmarks/results/scale.json"),
              ("scale.md", "scale-100k.md", "scale-100k-duplicates.md", "scale-efc200.md"),
              ("locomo", "longmemeval"), ("default", "lexical_bm25", "vector")),
    Benchmark("listing", "List pages (first and last), Count and filters at 100,000 and "
              "1,000,000 memories, the metadata GIN's worth, a selective filter inside Recall",
              module("benchmarks.performance.listing", "--report-to",
                     "benchmarks/reports/listing.md", "--json",
                     "benchmarks/results/listing.json"),
              ("listing.md",), ("locomo", "longmemeval"), ("default",)),
    Benchmark("typos", "misspellings (issue 56): the lexical leg with corrections against the "
              "statement before them (--baseline), latency and recall@10 as written and "
              "misspelt; the behaviour cases with a typo and Recall end to end, corrections off "
              "and on",
              module("benchmarks.performance.typos", "--queries", "0", "--report-to",
                     "benchmarks/reports/typos.md", "--json", "benchmarks/results/typos.json"),
              ("typos.md",), ("locomo", "scifact")),
    Benchmark("recall-latency", "p50/p95/p99 of 1,000 sequential recalls on the demo set: "
              "lexical-only, then hybrid (own stacks)", recall_latency),
    Benchmark("context-latency", "Context (recall packed into a token budget) next to plain "
              "Recall, same questions, one run",
              module("benchmarks.performance.context_latency"),
              ("context-latency.md", "context-latency.json")),
    Benchmark("gateway", "hybrid recall through the gateway on 5,000 memories: concurrency "
              "1/8/32, overhead, a hanging leg (--legs lexical,vector,graph: the graph leg's "
              "cost)", module("benchmarks.performance.gateway_recall", "--json",
                              "benchmarks/results/gateway_recall.json"),
              (), ("locomo", "longmemeval")),
    Benchmark("security", "recall with authentication, and authentication + TLS on every hop, "
              "against plaintext (issue 24)",
              module("benchmarks.performance.security_overhead", "--rounds", "3", "--json",
                     "benchmarks/results/security_overhead.json", "--report",
                     "benchmarks/reports/security-overhead.md"), ("security-overhead.md",),
              ("locomo", "longmemeval")),
    Benchmark("fusion-hop", "the fusion service's round trip against in-process fusion on the "
              "legs' real lists, and a whole recall with and without the service, one run",
              module("benchmarks.performance.fusion_hop", "--json",
                     "benchmarks/results/fusion_hop.json", "--report",
                     "benchmarks/reports/fusion-hop.md"), ("fusion-hop.md",),
              ("locomo", "longmemeval")),
    Benchmark("overload", "1 to 500 concurrent clients (90% recall, 10% store): goodput, "
              "shedding, latency, status codes, zero lost writes (issue 25)",
              module("benchmarks.performance.overload", "--json",
                     "benchmarks/results/overload.json", "--report",
                     "benchmarks/reports/overload.md"), ("overload.md", "overload.png"),
              ("locomo", "longmemeval")),
    Benchmark("soak", "30 minutes of recall / store / delete at a fixed rate: errors, p95, RSS, "
              "connections, every acknowledged write (issue 25)",
              module("benchmarks.performance.soak", "--json", "benchmarks/results/soak.json",
                     "--report", "benchmarks/reports/soak.md"), ("soak.md", "soak.png"),
              ("locomo", "longmemeval")),
    Benchmark("replica", "reads from a real streaming replica against reads from the primary: "
              "recall, Store + IndexWait, the replica's lag under writes (issue 44)",
              module("benchmarks.performance.replica_reads", "--report-to",
                     "benchmarks/reports/replica-reads.md"), ("replica-reads.md",),
              ("locomo", "longmemeval")),
    Benchmark("failover", "a real primary SIGKILLed under store/recall load, its streaming "
              "replica promoted, synchronous and asynchronous replication: acknowledged stores "
              "lost, what clients see and for how long (issue 44)",
              module("benchmarks.performance.failover", "--report-to",
                     "benchmarks/reports/failover.md"), ("failover.md",)),
    Benchmark("bm25-index", "the lexical leg's BM25 from the pg_textsearch index against the "
              "SQL statements and the index's own order, every set in one database, by cluster "
              "(issue 58)",
              module("benchmarks.quality.bm25_index", "--report-to",
                     "benchmarks/reports/bm25-index.md", "--json",
                     "benchmarks/results/bm25-index.json"), ("bm25-index.md",),
              ("locomo", "longmemeval", "scifact")),
    Benchmark("bm25-ingest", "8 concurrent writers through the stack with and without the BM25 "
              "index, in turns; VACUUM after deletes (issue 58)",
              module("benchmarks.performance.bm25_ingest", "--report-to",
                     "benchmarks/reports/bm25-ingest.md", "--json",
                     "benchmarks/results/bm25-ingest.json"), ("bm25-ingest.md",),
              ("locomo", "longmemeval", "scifact")),
    Benchmark("write-locks", "the issue's deadlock and a cross-namespace row writer raced "
              "against pg_textsearch 1.0 with each of the writers' locks, rounds stuck "
              "(issue 65)",
              module("benchmarks.performance.write_locks", "--report-to",
                     "benchmarks/reports/write-locks.md"), ("write-locks.md",)),
    Benchmark("agent-tasks", "recall on the agent-task set's task prompts, served: the task's "
              "memory first, recall@5, empty when nothing is stored, against the vector leg "
              "alone and LanceDB hybrid, with the lexical language prior (issue 66)",
              module("benchmarks.quality.agent_tasks", "--report-to",
                     "benchmarks/reports/agent-tasks.md"), ("agent-tasks.md",)),
    Benchmark("console-upload", "the console's largest uploads (over the record cap, the "
              "largest accepted, one huge line, nested deep, over the size) while other "
              "requests are probed: their worst delay and the console's peak RSS (issue 65)",
              module("benchmarks.performance.console_upload", "--report-to",
                     "benchmarks/reports/console-upload.md"), ("console-upload.md",)),
    Benchmark("restore", "a base backup + WAL archive taken under store load, restored whole "
              "and to a point in time: sizes, times, per-table checksums, the stack serving "
              "from the restored instance (issue 44)",
              module("benchmarks.performance.restore", "--report-to",
                     "benchmarks/reports/restore.md"), ("restore.md",)),
)}


def listing() -> str:
    width = max(map(len, BENCHMARKS))
    lines = ["Benchmarks (python -m benchmarks NAME [args]; NAME --help for its options; "
             "reports under benchmarks/reports/):", ""]
    for b in BENCHMARKS.values():
        lines.append(f"  {b.name:{width}}  {b.description}")
        if b.reports:
            lines.append(f"  {'':{width}}  -> {', '.join(b.reports)}")
    lines += ["", "Harness: python -m benchmarks {run,compare,diff,configs} (--help)."]
    return "\n".join(lines)
