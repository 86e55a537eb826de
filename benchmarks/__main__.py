"""The retrieval benchmark harness.

  python -m benchmarks run --dataset DIR --configs NAME[,NAME...] --out OUTDIR [--limit N]
                           [--target host:port] [--skip-ingest]
  python -m benchmarks compare OUTDIR [--baseline lexical] [--metric recall@10]
                               [--append-to benchmarks/reports/retrieval.md]
  python -m benchmarks diff A.json B.json [--k 10] [--show 5] [--json-to diff.json]
  python -m benchmarks configs
  python -m benchmarks NAME [args]      a registered benchmark (benchmarks/registry.py)
  python -m benchmarks                  lists them

`run` starts its own stack (or uses --target, with the API key in RECALLMESH_API_KEY or the
local admin key file of `recallmesh up`), ingests DIR through StoreBatch
(waiting for indexing), runs every query of every configuration through Recall
and writes OUTDIR/<config>.json. Names starting with `peer_` are other systems
(bm25s, LanceDB: the lab's dependencies; pgvector's single-SQL hybrid, in the stack's
own Postgres) run side by side over the texts and vectors the stack stored.
`compare` prints and writes OUTDIR/report.md. `diff` compares two result
files query by query (the same answers? exit 2 when they cannot be compared).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.harness.budget import compact_json
from benchmarks.harness.configs import CONFIGS, DEFAULT_CONFIGS
from benchmarks.harness.diff import DiffError, diff
from benchmarks.harness.peers import PEERS
from benchmarks.harness.report import compare, summary
from benchmarks.harness.runner import BATCH, run
from benchmarks.harness.script import names
from benchmarks.registry import BENCHMARKS, listing


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(listing())
        return
    if argv[0] in BENCHMARKS:
        BENCHMARKS[argv[0]].main(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     epilog=listing(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run configurations over a benchmark folder")
    r.add_argument("--dataset", type=Path, required=True)
    r.add_argument("--configs", type=names, default=",".join(DEFAULT_CONFIGS))
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--limit", type=int, default=None, help="first N scored queries only")
    r.add_argument("--target", default=None, help="a running gateway instead of an own stack "
                   "(its API key: RECALLMESH_API_KEY, else the local admin key file)")
    r.add_argument("--skip-ingest", action="store_true",
                   help="with --target: the dataset's namespaces are already loaded")
    r.add_argument("--namespace-tag", default="", help="store this load apart from earlier "
                   "loads of the same folder on the same stack")
    r.add_argument("--dsn", default=None, help="with --target, for peers: the stack's Postgres "
                   "(default RECALLMESH_DSN or the embedded one)")
    r.add_argument("--embedder", default=None, help="with --target, for peers: the embedding "
                   "service (default RECALLMESH_EMBEDDING_TARGET or localhost:50054; called with "
                   "RECALLMESH_INTERNAL_TOKEN)")
    r.add_argument("--ingest-batch", type=int, default=BATCH,
                   help=f"memories per StoreBatch while loading, each waiting until indexed "
                   f"(default {BATCH}; smaller for a slow model on a CPU)")
    r.add_argument("--unanswerable", action="store_true",
                   help="also ask the questions nothing answers (LoCoMo adversarial, "
                   "LongMemEval abstention): their answers and scores go in each result file")
    r.add_argument("--corpus-sample", type=int, default=None,
                   help="a one-namespace corpus (SciFact) cut to N documents: the kept queries' "
                   "relevant ones, then others in a fixed hash order")
    c = sub.add_parser("compare", help="report OUTDIR's configurations against a baseline")
    c.add_argument("out", type=Path)
    c.add_argument("--baseline", default="lexical")
    c.add_argument("--metric", default="recall@10")
    c.add_argument("--append-to", type=Path, default=None,
                   help="also append the report to this markdown file "
                   "(e.g. benchmarks/reports/retrieval.md)")
    c.add_argument("--summary-to", type=Path, default=None,
                   help="also write every configuration's settings and metrics (no per-query "
                   "rows) to this JSON file")
    d = sub.add_parser("diff", help="compare two result files' rankings query by query")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    d.add_argument("--k", type=int, default=None,
                   help="compare the top k (default: the files' k)")
    d.add_argument("--show", type=int, default=5, help="differing queries printed in full")
    d.add_argument("--json-to", type=Path, default=None,
                   help="also write the counts, metric deltas and every differing query here")
    sub.add_parser("configs", help="list the known configurations")
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.ingest_batch < 1:
            parser.error("--ingest-batch must be at least 1")
        run(args.dataset, args.configs, args.out, args.limit, args.target, args.skip_ingest,
            args.dsn, args.embedder, args.namespace_tag, args.ingest_batch,
            unanswerable=args.unanswerable, corpus_sample=args.corpus_sample)
    elif args.command == "compare":
        text = compare(args.out, args.baseline, args.metric)
        (args.out / "report.md").write_text(text)
        if args.summary_to is not None:
            args.summary_to.parent.mkdir(parents=True, exist_ok=True)
            args.summary_to.write_text(compact_json(summary(args.out)) + "\n")
        if args.append_to is not None:
            with open(args.append_to, "a", encoding="utf-8") as f:
                f.write("\n" + text)
        print(text)
    elif args.command == "diff":
        if args.k is not None and args.k < 1:
            parser.error("--k must be at least 1")
        try:
            print(diff(args.a, args.b, args.k, args.show, args.json_to), end="")
        except DiffError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)
    else:
        for config in [*CONFIGS.values(), *PEERS.values()]:
            print(f"{config.name:20} {config.description}")


if __name__ == "__main__":
    main()
