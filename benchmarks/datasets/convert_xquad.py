#!/usr/bin/env python3
"""Convert XQuAD (one language) into a short-document retrieval set of the common shape.

Standard library only, deterministic (upstream order kept, fixed JSON formatting).

Usage:
    python3 convert.py SRC [--lang en|de|zh|...] [--outdir DIR]

SRC is a checkout (or export) of github.com/google-deepmind/xquad holding xquad.<lang>.json
(SQuAD v1.1 format: data[] -> title, paragraphs[] -> context, qas[] -> id, question, answers).
--lang defaults to the suffix of this script's folder (xquad_en -> en); --outdir defaults to
this script's folder.

What is what:
  * corpus.jsonl: one paragraph per line {"id": "a<article>-p<paragraph>", "text": context,
    "article": the SQuAD article title}. The title is kept as "article", not "title": the
    titles are English in every language file, and the harness prepends a "title" to what it
    stores, which would hand non-English sets an English hint.
  * queries.jsonl: every question {"query_id": the SQuAD question id + "-<lang>", "text",
    "category": "factoid", "category_name": "factoid", "article", "answers"}.
  * qrels.jsonl: the paragraph the question was written on (binary, one per query).
Scope: one corpus for all queries (240 paragraphs from 48 Wikipedia articles, all of them).
"""

import argparse
import collections
import json
import os

from common_shape import write_set


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--lang", required=True)
    ap.add_argument("--outdir", help="default: xquad_<lang> beside this script")
    args = ap.parse_args()
    args.outdir = args.outdir or os.path.join(here, f"xquad_{args.lang}")
    with open(os.path.join(args.src, f"xquad.{args.lang}.json"), encoding="utf-8") as f:
        data = json.load(f)

    corpus, queries, qrels = [], [], []
    seen = set()
    for a, article in enumerate(data["data"]):
        title = article["title"].replace("_", " ")
        for p, para in enumerate(article["paragraphs"]):
            pid = f"a{a:02d}-p{p:02d}"
            corpus.append({"id": pid, "text": para["context"].strip(), "article": title})
            for qa in para["qas"]:
                qid = "{}-{}".format(qa["id"], args.lang)
                if qid in seen:
                    raise SystemExit(f"duplicate question id {qid}")
                seen.add(qid)
                queries.append({
                    "query_id": qid,
                    "text": qa["question"].strip(),
                    "category": "factoid",
                    "category_name": "factoid",
                    "article": title,
                    "answers": sorted({x["text"] for x in qa["answers"]}),
                })
                qrels.append({"query_id": qid, "relevant_ids": [pid]})

    os.makedirs(args.outdir, exist_ok=True)
    per_article = collections.Counter(r["article"] for r in corpus)
    stats = {
        "language": args.lang,
        "corpus_rows": len(corpus),
        "articles": len(per_article),
        "queries_scored": len(queries),
        "relevant_pairs": len(qrels),
        "corpus_chars_median": sorted(len(r["text"]) for r in corpus)[len(corpus) // 2],
        "corpus_chars_max": max(len(r["text"]) for r in corpus),
    }
    write_set(args.outdir, corpus, queries, qrels, stats)


if __name__ == "__main__":
    main()
