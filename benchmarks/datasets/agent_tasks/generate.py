#!/usr/bin/env python3
"""Generate the agent-task evaluation set: an agent's stored memories about its user, and the
user's instructions ("Book Maya a table for dinner on Saturday.") that need some of them.

Standard library only, no network, deterministic (fixed seed, fixed order, fixed JSON
formatting): running it again writes byte-identical files.

Usage:
    python3 benchmarks/datasets/agent_tasks/generate.py [--outroot DIR]

Writes ../agent_tasks_dev/ and ../agent_tasks_test/ (or DIR/agent_tasks_dev, ...): each holds
corpus.jsonl, queries.jsonl, qrels.jsonl, excluded_queries.jsonl, stats.json, README.md and
LICENSE. Everything comes from the hand-written tables beside this script:
  * people_en.py, people_de.py, people_es.py: one memory table per person (DEV and TEST
    people are different people with different names);
  * prompts_en.py, prompts_de.py, prompts_es.py: task-prompt templates per topic and
    nothing-stored prompts, written separately for the dev and the test family.
What is what:
  * a person is one namespace (`conversation_id` = "<language>-<key>"); a memory is a
    corpus row {"id": "<conversation_id>:m<nn>", "text", "conversation_id", "timestamp",
    "topic", "language", "aspects"};
  * a template says which aspects of a person's memories its task needs; for each person the
    script picks templates of the person's language and family whose first (and any `!`)
    aspect the person has, spread over the person's topics, least-used first; the task's
    relevant ids are all the person's memories tagged with a needed aspect (multi-label);
  * nothing-stored prompts (general knowledge, arithmetic, writing, or a fact about the person
    that is stored for no one) go to excluded_queries.jsonl with reason
    "abstention: nothing stored answers this" (benchmarks.harness.data loads them with
    unanswerable=True).
"""

import argparse
import collections
import math
import os
import random
import re
import sys
import textwrap
import unicodedata
from datetime import datetime, timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (HERE, os.path.dirname(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import people_de  # noqa: E402
import people_en  # noqa: E402
import people_es  # noqa: E402
import prompts_de  # noqa: E402
import prompts_en  # noqa: E402
import prompts_es  # noqa: E402
from common_shape import write_jsonl, write_set  # noqa: E402

SEED = 66  # the number; every random choice below comes from it
LANGUAGES = {"en": (people_en, prompts_en), "de": (people_de, prompts_de),
             "es": (people_es, prompts_es)}
FAMILIES = ("dev", "test")
TOPICS = {
    "food": "diet allergy likes dislikes restaurant cooking drinks",
    "home": "city flat area repair move",
    "work": "role employer manager team hours project",
    "health": "sport condition doctor meds sleep goal",
    "travel": "seat airline style likes docs trip transport packing",
    "tech": "laptop phone software github accounts prefs",
    "family": "partner kids parents siblings friends dates",
    "schedule": "morning workdays weekly quiet evening",
    "hobbies": "main reading music club other",
    "money": "bank budget bills subs savings payment",
    "pets": "pet vet food care",
    "learning": "language course goal reading",
}
ASPECTS = {f"{t}.{a}" for t, names in TOPICS.items() for a in names.split()}
FORMS = ("request", "planning", "drafting", "recommending", "setup", "briefing", "question")
NOTHING_KINDS = ("general", "arithmetic", "writing", "unstored")
REASON = "abstention: nothing stored answers this"
MEMORY_SPAN = (datetime(2026, 1, 5), datetime(2026, 4, 24))  # when memories were stored
QUERY_START, QUERY_DAYS = datetime(2026, 5, 4), 26  # prompts come after them
# A memory that names a month (January-April) was stored after that month began.
MONTHS = {1: ("january", "januar", "enero"), 2: ("february", "februar", "febrero"),
          3: ("march", "märz", "marzo"), 4: ("april", "abril")}

_STOPWORDS = {
    "en": """a about after again all also am an and any anything are around as at away be
        because been before being but by can can't could did do does doesn't don't down each
        every for from get give go going got had has have he her here hers him his how i i'd
        i'll i'm i've if in into is isn't it it's its just let like ll make me more most my
        next no not now of off on once one only or other our out over own please re really s
        so some something somewhere such t than that that's the their them then there these
        they this those through to too under until up us ve very want was we we're were what
        what's when when's where which while who who's whoever whatever why will with won't
        would you you'll your yours""",
    "de": """ab aber alle allem allen aller alles als also am an auch auf aus bei beim bin bis
        bitte da damit dann das dass dein deine dem den denen der des dich die dies diese
        diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines
        er es etwas euch für gegen gern gibt hab habe haben hat hatte ich ihm ihn ihr ihre
        ihrem ihren ihrer im in ist ja jede jedem jeden jeder jedes kann kein keine keinen
        man mein meine meinem meinen meiner mich mir mit muss nach nicht noch nur ob oder
        ohne sein seine seinem seinen seiner sich sie sind so soll sollte sollten über um und
        uns unser unsere unter vom von vor war was weg welche welchen welcher welches wenn
        wer wie will wir wird wo zu zum zur""",
    "es": """a al algo alguien algún alguna alguno ante como con cual cuál cuando cuándo de
        debería del desde donde dónde el él ella ellas ellos en entre era es esa ese eso esta
        está este esto estos estas estoy fue ha haber hace hacer han hay la las le les lo los
        me mi mis muy más nada ni no nos nuestra nuestro o para pero poco por porque puede
        pueda que qué quien quién se sea ser si sí sin sobre su sus tan te tiene tienen toda
        todas todo todos tu tú un una uno unos unas ya y yo""",
}
STOPWORDS = {lang: set(words.split()) for lang, words in _STOPWORDS.items()}


def entries(block):
    """The lines of a table, an indented line joined to the one above."""
    out = []
    for line in block.strip("\n").splitlines():
        if not line.strip():
            continue
        if line[0] in " \t":
            out[-1] += " " + line.strip()
        else:
            out.append(line.strip())
    return out


def matches(tag, need):
    return tag == need or (need.endswith(".*") and tag.split(".")[0] == need[:-2])


def genitive(name):
    return name + "'" if name[-1] in "sßxz" else name + "s"


def render(text, person):
    text = text.replace("{name}", person["name"]).replace("{gen}", genitive(person["name"]))
    return re.sub(r"\(\(([^|()]*)\|([^|()]*)\)\)",
                  lambda m: m.group(1) if person["gender"] == "m" else m.group(2), text)


def read_people():
    people, names = [], set()
    for lang, (module, _) in LANGUAGES.items():
        for family in FAMILIES:
            for key, name, gender, table in getattr(module, family.upper()):
                cid = f"{lang}-{key}"
                assert name not in names, f"name used twice: {name}"
                names.add(name)
                memories = []
                for line in entries(table):
                    tags, text = (part.strip() for part in line.split(" | ", 1))
                    tags = tags.split(",")
                    assert all(t in ASPECTS for t in tags), (cid, tags)
                    memories.append({"tags": tags, "topic": tags[0].split(".")[0],
                                     "text": text})
                per_topic = collections.Counter(m["topic"] for m in memories)
                assert 25 <= len(memories) <= 60, (cid, len(memories))
                assert len(per_topic) >= 6 and all(3 <= n <= 7 for n in per_topic.values()), (
                    cid, per_topic)
                assert sum("tech.github" in m["tags"] for m in memories) == 1, cid
                people.append({"cid": cid, "key": key, "name": name, "gender": gender,
                               "language": lang, "family": family, "memories": memories})
    return people


def read_templates():
    templates, nothing = {}, {}
    for lang, (_, module) in LANGUAGES.items():
        for family in FAMILIES:
            rows = []
            for n, line in enumerate(entries(getattr(module, f"{family.upper()}_TEMPLATES"))):
                topic, form, needs, text = (part.strip() for part in line.split(" | ", 3))
                assert topic in TOPICS and form in FORMS, line
                tokens = needs.split()
                required = [tokens[0].lstrip("!")] + [t[1:] for t in tokens if t[0] == "!"]
                needed = list(dict.fromkeys(t.lstrip("!") for t in tokens))
                assert all(t in ASPECTS or t[:-2] in TOPICS and t.endswith(".*")
                           for t in needed), line
                rows.append({"id": f"{family}-{lang}-{topic}-{n + 1:02d}", "topic": topic,
                             "form": form, "needs": needed, "required": required,
                             "text": text})
            templates[family, lang] = rows
            pool = []
            for n, line in enumerate(entries(getattr(module, f"{family.upper()}_NOTHING"))):
                kind, text = (part.strip() for part in line.split(" | ", 1))
                assert kind in NOTHING_KINDS, line
                pool.append({"id": f"{family}-{lang}-none-{n + 1:02d}", "kind": kind,
                             "text": text})
            nothing[family, lang] = pool
    # The test family's phrasings are its own: no template text is shared with dev.
    for lang in LANGUAGES:
        dev = {norm(t["text"]) for t in templates["dev", lang] + nothing["dev", lang]}
        test = {norm(t["text"]) for t in templates["test", lang] + nothing["test", lang]}
        assert not dev & test, (lang, dev & test)
    return templates, nothing


def norm(text):
    return " ".join(re.findall(r"\w+", text.lower()))


def stamp(rng, start, days, first_hour, last_hour):
    when = start + timedelta(days=rng.randrange(days))
    return (when + timedelta(minutes=rng.randrange(first_hour * 60, last_hour * 60))).isoformat()


def memory_time(rng, text):
    low, high = MEMORY_SPAN
    lowered = text.lower()
    for month, names in MONTHS.items():
        if any(re.search(rf"\b{name}\b", lowered) for name in names):
            low = max(low, datetime(2026, month, 6))
    return stamp(rng, low, (high - low).days + 1, 7, 22)


def build(people, templates, nothing, family):
    """corpus, queries, qrels, excluded rows of one family."""
    corpus, queries, qrels, excluded = [], [], [], []
    used = collections.Counter()
    number = 0
    for person in (p for p in people if p["family"] == family):
        rng = random.Random(f"agent-tasks:{SEED}:{person['cid']}")
        ids = []
        for n, memory in enumerate(person["memories"]):
            ids.append(f"{person['cid']}:m{n + 1:02d}")
            corpus.append({"id": ids[-1], "text": memory["text"],
                           "conversation_id": person["cid"],
                           "timestamp": memory_time(rng, memory["text"]),
                           "topic": memory["topic"], "language": person["language"],
                           "aspects": memory["tags"]})
        tags = [m["tags"] for m in person["memories"]]

        def relevant(template, tags=tags, ids=ids):
            return [i for i, t in zip(ids, tags, strict=True)
                    if any(matches(a, need) for a in t for need in template["needs"])]

        def has(aspect, tags=tags):
            return any(matches(a, aspect) for t in tags for a in t)

        by_topic = collections.defaultdict(list)
        for template in templates[family, person["language"]]:
            if all(has(r) for r in template["required"]) and relevant(template):
                by_topic[template["topic"]].append(template)
        topics = sorted(by_topic)
        rng.shuffle(topics)
        wanted, chosen = 8 + rng.randrange(2), []
        while len(chosen) < wanted:
            before = len(chosen)
            for topic in topics:
                left = [t for t in by_topic[topic] if t not in chosen]
                if left and len(chosen) < wanted:
                    low = min(used[t["id"]] for t in left)
                    chosen.append(rng.choice([t for t in left if used[t["id"]] == low]))
                    used[chosen[-1]["id"]] += 1
            if len(chosen) == before:
                break
        pool = nothing[family, person["language"]]
        offset, picked = rng.randrange(len(NOTHING_KINDS)), []
        for n in range(3 + rng.randrange(2)):
            kind = NOTHING_KINDS[(offset + n) % len(NOTHING_KINDS)]
            left = [t for t in pool if t["kind"] == kind and t not in picked]
            low = min(used[t["id"]] for t in left)
            picked.append(rng.choice([t for t in left if used[t["id"]] == low]))
            used[picked[-1]["id"]] += 1
        prompts = [(t, True) for t in chosen] + [(t, False) for t in picked]
        rng.shuffle(prompts)
        for template, answerable in prompts:
            number += 1
            text = render(template["text"], person)
            row = {"query_id": f"agent-tasks-{family}:{number:03d}",
                   "conversation_id": person["cid"], "text": text,
                   "category": template["topic"] if answerable else "none",
                   "timestamp": stamp(rng, QUERY_START, QUERY_DAYS, 8, 21),
                   "family_people": family, "family_template": family,
                   "language": person["language"],
                   "form": template["form"] if answerable else "nothing-stored",
                   "template_id": template["id"],
                   "mentions_name": person["name"] in text}
            if answerable:
                rel = relevant(template)
                row["topics_needed"] = sorted({person["memories"][ids.index(i)]["topic"]
                                               for i in rel})
                queries.append(row)
                qrels.append({"query_id": row["query_id"], "relevant_ids": rel})
            else:
                row["nothing_kind"] = template["kind"]
                row["reason"] = REASON
                excluded.append(row)
    return corpus, queries, qrels, excluded


def tokens(text, lang, drop):
    words = re.findall(r"\w+", text.lower())
    return {w for w in words if len(w) > 1 and not w.isdigit() and w not in STOPWORDS[lang]
            and w not in drop}


def plain(text):
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def overlap(people, corpus, queries, qrels, excluded):
    """How often a prompt shares a content word with the memories it needs (and others)."""
    names = {p["cid"]: {form for n in (p["name"].lower(), plain(p["name"]).lower())
                        for form in (n, n + "s")} for p in people}  # "Lenas Mutter"
    memories = collections.defaultdict(list)
    for row in corpus:
        memories[row["conversation_id"]].append(row)
    rel = {r["query_id"]: set(r["relevant_ids"]) for r in qrels}
    pairs = shared = shared5 = prompts_any = traps = 0
    trap_words = collections.Counter()
    for q in queries:
        drop, lang = names[q["conversation_id"]], q["language"]
        qt = tokens(q["text"], lang, drop)
        q5 = {w[:5] for w in qt}
        hit_needed = hit_other = False
        for m in memories[q["conversation_id"]]:
            mt = tokens(m["text"], lang, drop)
            if m["id"] in rel[q["query_id"]]:
                pairs += 1
                shared += bool(qt & mt)
                shared5 += bool(q5 & {w[:5] for w in mt})
                hit_needed |= bool(qt & mt)
            else:
                hit_other |= bool(qt & mt)
                trap_words.update(qt & mt)
        prompts_any += hit_needed
        traps += hit_other
    empty = sum(any(tokens(q["text"], q["language"], names[q["conversation_id"]])
                    & tokens(m["text"], q["language"], names[q["conversation_id"]])
                    for m in memories[q["conversation_id"]]) for q in excluded)
    n = len(queries)
    return {
        "needed_pairs": pairs,
        "needed_pairs_sharing_a_word": round(shared / pairs, 3),
        "needed_pairs_sharing_a_5_letter_prefix": round(shared5 / pairs, 3),
        "prompts_sharing_a_word_with_a_needed_memory": round(prompts_any / n, 3),
        "prompts_sharing_a_word_with_an_unneeded_memory": round(traps / n, 3),
        "nothing_stored_prompts_sharing_a_word_with_a_memory": round(empty / len(excluded), 3),
        "words_most_often_shared_with_unneeded_memories": [
            w for w, _ in sorted(trap_words.items(), key=lambda kv: (-kv[1], kv[0]))[:10]],
    }


def bm25(corpus, queries, qrels, k1=0.9, b=0.4):
    """Stdlib BM25 within each person's memories (lowercase word tokens, nothing dropped)."""
    docs = collections.defaultdict(list)
    for row in corpus:
        docs[row["conversation_id"]].append((row["id"], re.findall(r"\w+", row["text"].lower())))
    rel = {r["query_id"]: set(r["relevant_ids"]) for r in qrels}
    sums = collections.Counter()
    for q in queries:
        scope = docs[q["conversation_id"]]
        df = collections.Counter(w for _, words in scope for w in set(words))
        avg = sum(len(words) for _, words in scope) / len(scope)
        terms, size = re.findall(r"\w+", q["text"].lower()), len(scope)

        def score(words, df=df, avg=avg, n=size, terms=terms):
            tf = collections.Counter(words)
            return sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * (k1 + 1)
                       / (tf[t] + k1 * (1 - b + b * len(words) / avg)) for t in terms if tf[t])

        ranked = [i for _, i in sorted(((-score(words), i) for i, words in scope))]
        good = rel[q["query_id"]]
        sums["recall@5"] += len(good & set(ranked[:5])) / len(good)
        sums["recall@10"] += len(good & set(ranked[:10])) / len(good)
        sums["mrr"] += next(1 / (r + 1) for r, i in enumerate(ranked) if i in good)
        dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(ranked[:10]) if i in good)
        sums["ndcg@10"] += dcg / sum(1 / math.log2(r + 2) for r in range(min(10, len(good))))
    return {k: round(v / len(queries), 3) for k, v in sorted(sums.items())}


def statistics(people, family, corpus, queries, qrels, excluded, templates):
    folk = [p for p in people if p["family"] == family]
    langs = sorted({p["language"] for p in folk}, key=list(LANGUAGES).index)
    per_query = collections.Counter(len(r["relevant_ids"]) for r in qrels)
    total = len(queries) + len(excluded)
    return {
        "family": family,
        "people": len(folk),
        "corpus_rows": len(corpus),
        "memories_per_person": {p["cid"]: len(p["memories"]) for p in folk},
        "topics_per_person": {p["cid"]: len({m["topic"] for m in p["memories"]}) for p in folk},
        "memories_per_topic": dict(sorted(collections.Counter(r["topic"] for r in corpus)
                                          .items())),
        "prompts": total,
        "queries_scored": len(queries),
        "excluded_nothing_stored": len(excluded),
        "nothing_stored_share": round(len(excluded) / total, 3),
        "per_language": {lang: {
            "people": sum(p["language"] == lang for p in folk),
            "memories": sum(r["language"] == lang for r in corpus),
            "queries_scored": sum(q["language"] == lang for q in queries),
            "nothing_stored": sum(q["language"] == lang for q in excluded)} for lang in langs},
        "queries_per_category": dict(sorted(collections.Counter(q["category"] for q in queries)
                                            .items())),
        "queries_per_form": dict(sorted(collections.Counter(q["form"] for q in queries)
                                        .items())),
        "nothing_stored_per_kind": dict(sorted(collections.Counter(
            q["nothing_kind"] for q in excluded).items())),
        "queries_needing_two_topics": sum(len(q["topics_needed"]) > 1 for q in queries),
        "prompts_naming_the_person": sum(q["mentions_name"] for q in queries + excluded),
        "templates_written": sum(len(templates[family, lang]) for lang in langs),
        "templates_used": len({q["template_id"] for q in queries}),
        "relevant_pairs": sum(len(r["relevant_ids"]) for r in qrels),
        "relevant_per_query": {str(k): v for k, v in sorted(per_query.items())},
        "lexical_overlap": overlap(people, corpus, queries, qrels, excluded),
        "bm25_reference": bm25(corpus, queries, qrels),
    }


def check(corpus, queries, qrels, excluded):
    owner = {r["id"]: r["conversation_id"] for r in corpus}
    assert len(owner) == len(corpus)
    by_id = {q["query_id"]: q for q in queries}
    assert [r["query_id"] for r in qrels] == list(by_id)
    for r in qrels:
        assert r["relevant_ids"], r
        assert all(owner.get(i) == by_id[r["query_id"]]["conversation_id"]
                   for i in r["relevant_ids"]), r
    seen = collections.Counter((q["conversation_id"], q["text"]) for q in queries + excluded)
    assert max(seen.values()) == 1, [k for k, v in seen.items() if v > 1]


LICENSE = """\
Creative Commons Legal Code: CC0 1.0 Universal (SPDX: CC0-1.0)

The agent-task evaluation set (benchmarks/datasets/agent_tasks_dev/,
benchmarks/datasets/agent_tasks_test/ and the tables and generator in
benchmarks/datasets/agent_tasks/) was written for recallmesh. To the extent possible under
law, its authors have waived all copyright and related or neighboring rights to this work,
dedicating it to the public domain worldwide. The work is distributed without any warranty.

Full text of the dedication: https://creativecommons.org/publicdomain/zero/1.0/legalcode
"""


def readme(family, stats, queries, qrels, corpus):
    other = "test" if family == "dev" else "dev"
    s = stats
    lang_names = {"en": "English", "de": "German", "es": "Spanish"}
    langs = ", ".join(f"{lang_names[k]} {v['people']} people / {v['memories']} memories / "
                      f"{v['queries_scored']} scored + {v['nothing_stored']} nothing-stored"
                      for k, v in s["per_language"].items())
    o, bm = s["lexical_overlap"], s["bm25_reference"]
    traps = ", ".join(f'"{w}"' for w in o["words_most_often_shared_with_unneeded_memories"])
    mems = list(s["memories_per_person"].values())
    tops = list(s["topics_per_person"].values())
    first = next(q for q in queries if q["language"] == "en" and q["category"] == "food"
                 and q["mentions_name"])
    rel = next(r["relevant_ids"] for r in qrels if r["query_id"] == first["query_id"])
    text = {r["id"]: r["text"] for r in corpus}
    example = "\n".join(f"  - `{i}`: {text[i]}" for i in rel)
    role = ("**Frozen test split**: report on it, never tune on it (no template, phrasing or "
            "person here is in `../agent_tasks_dev/`)." if family == "test" else
            "**Development split**: tune on this one; `../agent_tasks_test/` is the frozen "
            "test split (other people, other names, separately written prompts).")
    cats = ", ".join(f"{k} {v}" for k, v in s["queries_per_category"].items())
    forms = ", ".join(f"{k} {v}" for k, v in s["queries_per_form"].items())
    kinds = ", ".join(f"{k} {v}" for k, v in s["nothing_stored_per_kind"].items())
    hist = ", ".join(f"{k} → {v}" for k, v in s["relevant_per_query"].items())
    rows = [
        ("corpus.jsonl", s["corpus_rows"],
         "`id` (`<conversation_id>:m<nn>`), `text` (a short third-person memory), "
         "`conversation_id` (the person: one namespace each), `timestamp` (when it was stored, "
         "2026-01-05 … 2026-04-24), `topic`, `language`, `aspects` (the `topic.aspect` tags "
         "the labels are built from)"),
        ("queries.jsonl", s["queries_scored"],
         "`query_id`, `conversation_id`, `text` (the instruction), `category` (the task's topic, "
         "the one its template was written for), `timestamp` (May 2026, after every memory), "
         "`family_people` "
         f'("{family}"), `family_template` ("{family}": which hand-written list the phrasing '
         "comes from), `template_id`, `language`, `form`, `topics_needed` (the topics of the "
         "labelled memories), `mentions_name`"),
        ("qrels.jsonl", s["queries_scored"],
         "`query_id`, `relevant_ids`: **every** memory the task needs (binary, multi-label; "
         f"{s['relevant_pairs']} pairs)"),
        ("excluded_queries.jsonl", s["excluded_nothing_stored"],
         "prompts about nothing stored (same fields, `category` \"none\", `form` "
         f'"nothing-stored", `nothing_kind`, `reason` "{REASON}"): their right answer is empty'),
        ("stats.json", "", "counts, overlap statistics, BM25 reference"),
        ("../agent_tasks/generate.py", "",
         "the generator (stdlib only, deterministic; writes both folders) with its tables "
         "`people_*.py`, `prompts_*.py`"),
        ("LICENSE", "", "CC0-1.0 (our own writing)"),
    ]
    files = "\n".join(["| file | rows | what |", "|---|---|---|"]
                      + [f"| `{name}` | {n} | {what} |" for name, n, what in rows])
    return f"""\
# Agent tasks ({family}) — which stored memories does a user's instruction need?

Agents recall with their user's instructions, not with benchmark questions: "Book Maya a table
for dinner on Saturday." (a dev-split example) needs "Maya is vegetarian on weekdays and
eats fish at weekends." and
"Maya is allergic to peanuts and carries an EpiPen." — which share no word with it but the
name. This set is such instructions against an agent's stored memories about its user.
{role}

**Synthetic**: every person, memory and prompt was written for recallmesh (issue 66) and is
fictional; nothing is taken from LoCoMo, LongMemEval, SciFact or any other benchmark. Real
place and product names (Lisbon, Bitwarden, Iberia, ...) appear as everyday facts; the
employers and most businesses are invented.

## Files

{files}

Load: `benchmarks.harness.data.load(Path("benchmarks/datasets/agent_tasks_{family}"),
unanswerable=True)`: {s['queries_scored']} scored queries, {s['excluded_nothing_stored']}
unanswerable ones, {s['people']} scopes (one per person). Every qrels id exists in the corpus
and belongs to the query's person.

## Counts

- {s['people']} people, {s['corpus_rows']} memories ({min(mems)}–{max(mems)} a person,
  {min(tops)}–{max(tops)} topics each, 3–7 memories a topic, one GitHub-handle memory each).
- {s['prompts']} prompts: {s['queries_scored']} scored + {s['excluded_nothing_stored']}
  nothing-stored (**{s['nothing_stored_share']:.1%}** nothing-stored).
- Per language: {langs}.
- Scored prompts per topic: {cats}.
- Forms: {forms}. Nothing-stored kinds: {kinds}.
- Relevant memories per scored prompt: {hist}; {s['queries_needing_two_topics']} prompts need
  memories of more than one topic (a call slot needs work hours and the weekly routine; a
  house-sitting brief the home and the pets). {s['prompts_naming_the_person']} of
  {s['prompts']} prompts name the person; the rest are in the first person ("Set up a
  monthly budget for me.") or not about the person at all.
- Templates: {s['templates_written']} written for this family, {s['templates_used']} used by
  at least one scored prompt.

Example (`{first['query_id']}`, {first['conversation_id']}): "{first['text']}"
{example}

## How it was generated

```
python3 benchmarks/datasets/agent_tasks/generate.py  # writes agent_tasks_dev/, agent_tasks_test/
```
Seed {SEED}; no network; output byte-identical on every run. The people and their memory
tables are hand-written (`people_en.py`, `people_de.py`, `people_es.py`); each memory carries
`topic.aspect` tags (a morning run is `health.sport` and `schedule.morning`). The prompt
templates are hand-written per topic and language, separately for each family
(`prompts_*.py`: DEV_TEMPLATES / TEST_TEMPLATES); each names the aspects its task needs.
For every person the generator picks 8–9 templates of the person's language and family that
fit what is stored (round-robin over the person's topics, least-used template first) and 3–4
nothing-stored prompts, and labels as relevant every memory of the person tagged with a
needed aspect. So labels are by aspect, written by hand once per template and once per
memory, not by text similarity.

Families: people are split dev / test (different people, different names; English, German
and Spanish in both), and so are the prompt lists (the test templates are other tasks or
other wordings; the generator checks that no template text occurs in both).

## Lexical overlap

Content words: lowercase word tokens without stopwords (a short list per language), numbers,
one-letter tokens and the person's own name.

- Needed (prompt, memory) pairs sharing a content word: **{o['needed_pairs_sharing_a_word']:.1%}**
  of {o['needed_pairs']} ({o['needed_pairs_sharing_a_5_letter_prefix']:.1%} when words are
  cut to 5 letters, a crude stemmer).
- Scored prompts sharing a content word with at least one needed memory:
  {o['prompts_sharing_a_word_with_a_needed_memory']:.1%}; with at least one memory it does
  **not** need (the trap: an everyday word such as "book", "set" or "new" in a memory of
  another topic): {o['prompts_sharing_a_word_with_an_unneeded_memory']:.1%}; the words most
  often shared that way: {traps}.
- Nothing-stored prompts sharing a content word with some memory of the person:
  {o['nothing_stored_prompts_sharing_a_word_with_a_memory']:.1%}.

Stdlib BM25 reference (k1=0.9, b=0.4, lowercase word tokens, ranked within the person's
memories): recall@5 {bm['recall@5']:.3f}, recall@10 {bm['recall@10']:.3f}, MRR
{bm['mrr']:.3f}, nDCG@10 {bm['ndcg@10']:.3f}.

## Caveats, honestly

- Synthetic and small: {s['people']} people here ({other} split aside), written by one author
  (an AI coding agent working on recallmesh), so the style of memories and prompts is more
  uniform than real agents' stores and users' requests.
- Labels are the author's judgement of what a task needs ("a dinner booking needs the diet,
  allergy, cuisine and restaurant memories, not a friend's birthday"), made per aspect; a
  memory outside the labels can still be marginally useful (a careful agent might check the
  partner's shift pattern before booking dinner), and the labels do not rank the needed
  memories.
- Templates repeat across people of one family (the same instruction with another name), and
  general nothing-stored prompts repeat verbatim across people.
- Memories are a snapshot: no updates, contradictions or superseded facts; timestamps are
  random in the span (after any month a memory names) and carry no meaning for the tasks.
- "Unstored" nothing-stored prompts ask about facts that no person in the set has stored
  (blood type, shoe size, ...): a system answering them from memory is making it up.
"""


def reflow(markdown, width=92):
    """Paragraphs and list items of `markdown` re-wrapped (tables, headings, code kept)."""
    out, item, code = [], [], False

    def flush():
        if item:
            bullet = item[0].startswith("- ")
            out.append(textwrap.fill(" ".join(item), width, subsequent_indent="  " * bullet,
                                     break_on_hyphens=False, break_long_words=False))
            item.clear()

    for line in markdown.splitlines():
        if line.startswith("```"):
            flush()
            code = not code
            out.append(line)
        elif code or line.startswith(("#", "|")) or not line.strip():
            flush()
            out.append(line)
        elif line.startswith("  - "):
            flush()
            out.append(line)
        else:
            if line.startswith("- "):
                flush()
            item.append(line.strip())
    flush()
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outroot", default=os.path.dirname(HERE))
    args = parser.parse_args()
    people = read_people()
    templates, nothing = read_templates()
    for family in FAMILIES:
        corpus, queries, qrels, excluded = build(people, templates, nothing, family)
        check(corpus, queries, qrels, excluded)
        stats = statistics(people, family, corpus, queries, qrels, excluded, templates)
        outdir = os.path.join(args.outroot, f"agent_tasks_{family}")
        os.makedirs(outdir, exist_ok=True)
        write_set(outdir, corpus, queries, qrels, stats)
        write_jsonl(os.path.join(outdir, "excluded_queries.jsonl"), excluded)
        for name, body in (("README.md", reflow(readme(family, stats, queries, qrels, corpus))),
                           ("LICENSE", LICENSE)):
            with open(os.path.join(outdir, name), "w", encoding="utf-8", newline="\n") as f:
                f.write(body)


if __name__ == "__main__":
    main()
