"""Writing a converted set in the common shape (shared/datasets/README.md): the JSON Lines files
and stats.json, as every converter here writes them (stdlib only, deterministic)."""

import json
import os
import sys


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_set(outdir, corpus, queries, qrels, stats):
    """corpus.jsonl, queries.jsonl, qrels.jsonl and stats.json into `outdir`; the stats also
    printed."""
    for name, rows in (("corpus", corpus), ("queries", queries), ("qrels", qrels)):
        write_jsonl(os.path.join(outdir, f"{name}.jsonl"), rows)
    with open(os.path.join(outdir, "stats.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(stats, f, ensure_ascii=False, indent=1)
        f.write("\n")
    json.dump(stats, sys.stdout, ensure_ascii=False)
    print()
