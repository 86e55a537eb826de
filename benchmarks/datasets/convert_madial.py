#!/usr/bin/env python3
"""Convert MADial-Bench (memory recall in dialogue) into the common benchmark shape.

Standard library only, deterministic (upstream order kept, fixed JSON formatting).

Usage:
    python3 convert.py SRC [--lang en|zh] [--outdir DIR]

SRC is a checkout (or export) of github.com/hejunqing/MADial-Bench holding
    data/en/MADial-Bench-en-memory.json    English memory archive (JSON Lines, {id: record})
    data/en/MADial-Bench-en-dialogue.json  English dialogues (JSON Lines)
    data/ch/MADial-Bench-zh-memory.json    Chinese memory archive (records carry user-id)
    data/ch/MADial-Bench-zh-dialogue.json  Chinese dialogues
--lang defaults to the suffix of this script's folder (madial_en -> en, madial_zh -> zh);
--outdir defaults to this script's folder.

What is what:
  * corpus.jsonl: one memory per line, the archive's event records
    {"id": "m<upstream id>", "text": event, "conversation_id": "user-<n>",
     "timestamp": the record's date at 00:00 (naive ISO, read as UTC), "date", "scene",
     "emotion"}. The English records have no user-id: it is taken from the Chinese record of
    the same id (every English id has one; both archives give Bart = user 1, Lisa = user 2).
  * queries.jsonl: one query per dialogue: the dialogue lines before its first test turn
    (the assistant turn that should recall a memory), "<Name>: \"text\"" written as
    "Name: text", joined by newlines. category = the scene of the first listed relevant
    memory (Activity / Preferences / Emotional / Others; the Chinese labels are mapped to
    these English names, and one Chinese memory is labelled 物品类 = Items).
  * qrels.jsonl: the dialogue's relevant-id list (binary relevance).
Scope: each user's memory archive is its own namespace (conversation_id), as in the paper's
memory recall task, where a dialogue's candidates are its user's memories.
"""

import argparse
import collections
import json
import os
import re

from common_shape import write_set

FILES = {
    "en": ("data/en/MADial-Bench-en-memory.json", "data/en/MADial-Bench-en-dialogue.json"),
    "zh": ("data/ch/MADial-Bench-zh-memory.json", "data/ch/MADial-Bench-zh-dialogue.json"),
}
# The Chinese archive's scene labels, in the English archive's words.
SCENES = {"活动类": "Activity", "喜好类": "Preferences", "情绪类": "Emotional",
          "其他类": "Others", "物品类": "Items"}
LINE = re.compile(r'^<([^>]+)>\s*:\s*(.*)$', re.S)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_memories(path):
    out = collections.OrderedDict()
    for row in read_jsonl(path):
        for key, rec in row.items():
            if key in out:
                raise SystemExit(f"duplicate memory id {key} in {path}")
            out[key] = rec
    return out


def clean_line(raw):
    raw = raw.strip()
    m = LINE.match(raw)
    if not m:
        return raw
    speaker, text = m.group(1).strip(), m.group(2).strip()
    for a, b in (('"', '"'), ("\u201c", "\u201d")):
        if len(text) >= 2 and text.startswith(a) and text.endswith(b):
            text = text[1:-1].strip()
    return f"{speaker}: {text}"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--lang", required=True)
    ap.add_argument("--outdir", help="default: madial_<lang> beside this script")
    args = ap.parse_args()
    args.outdir = args.outdir or os.path.join(here, f"madial_{args.lang}")
    if args.lang not in FILES:
        raise SystemExit("--lang must be en or zh")
    mem_path, dia_path = (os.path.join(args.src, p) for p in FILES[args.lang])
    memories = read_memories(mem_path)
    zh_memories = read_memories(os.path.join(args.src, FILES["zh"][0]))
    users = {k: v["user-id"] for k, v in zh_memories.items()}
    dialogues = read_jsonl(dia_path)

    corpus = []
    for key, rec in memories.items():
        if key not in users:
            raise SystemExit(f"memory {key} has no user-id")
        date = rec["time"].strip()
        corpus.append({
            "id": f"m{key}",
            "text": rec["event"].strip(),
            "conversation_id": f"user-{users[key]}",
            "timestamp": f"{date}T00:00:00",
            "date": date,
            "scene": rec.get("scene"),
            "emotion": rec.get("emotion"),
        })
    ids = {r["id"] for r in corpus}
    user_of = {r["id"]: r["conversation_id"] for r in corpus}

    queries, qrels = [], []
    per_cat = collections.Counter()
    per_user = collections.Counter()
    for n, d in enumerate(dialogues):
        first = min(d["test-turn"])
        lines = [clean_line(x) for x in d["dialogue"][1:first]]
        lines = [x for x in lines if x and x not in ("<BOD>", "<EOD>")]
        rel = [f"m{r}" for r in d["relevant-id"]]
        missing = [r for r in rel if r not in ids]
        if missing:
            raise SystemExit(f"dialogue {n}: unknown memory ids {missing}")
        conv = f"user-{d['user-id']}"
        if any(user_of[r] != conv for r in rel):
            raise SystemExit(f"dialogue {n}: relevant memory of another user")
        raw_scene = memories[str(d["relevant-id"][0])]["scene"]
        scene = SCENES.get(raw_scene, raw_scene)
        qid = f"madial-{args.lang}:{n}"
        queries.append({
            "query_id": qid,
            "conversation_id": conv,
            "text": "\n".join(lines),
            "category": scene,
            "category_name": scene,
            "test_turns": d["test-turn"],
        })
        qrels.append({"query_id": qid, "relevant_ids": rel})
        per_cat[scene] += 1
        per_user[conv] += 1

    os.makedirs(args.outdir, exist_ok=True)
    stats = {
        "language": args.lang,
        "corpus_rows": len(corpus),
        "memories_per_user": dict(sorted(collections.Counter(user_of.values()).items())),
        "queries_scored": len(queries),
        "queries_per_user": dict(sorted(per_user.items())),
        "queries_per_category": dict(sorted(per_cat.items())),
        "relevant_pairs": sum(len(q["relevant_ids"]) for q in qrels),
        "relevant_per_query": dict(sorted(collections.Counter(
            len(q["relevant_ids"]) for q in qrels).items())),
    }
    write_set(args.outdir, corpus, queries, qrels, stats)


if __name__ == "__main__":
    main()
