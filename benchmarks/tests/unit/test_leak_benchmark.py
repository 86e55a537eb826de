"""The leak benchmark's data and report (benchmarks/behaviour/leak.py), without a stack."""

from __future__ import annotations

import re

from benchmarks.behaviour.leak import (
    FACTS,
    LANGUAGES,
    SECRETS,
    SUBJECT_WORD,
    SUBJECTS_PER_PERSON,
    Asked,
    namespace_memories,
    people_fields,
    report,
    subjects_of,
)


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w{3,}", text)}


def test_every_person_has_every_memory_and_secrets_share_names_tags_and_words():
    """Each language's secrets share the person's name, an ordinary memory's tag and an
    everyday word with that person's ordinary memories; 400 harmless questions or more."""
    harmless = 0
    for language, (facts, secrets, _, speakers) in LANGUAGES.items():
        people = people_fields(language)
        assert len(people) == 20 and len({p["name"] for p in people}) == 20
        memories = namespace_memories(people[:2], language)
        assert len(memories) == 2 * (len(facts) + len(secrets) + 2 * SUBJECTS_PER_PERSON)
        kept = [(who, m) for who, key, m in memories if m.sensitive
                and not key.endswith("(secret)")]
        assert len(kept) == 2 * len(secrets)
        sharing = 0
        for who, secret in kept:
            theirs = [m for w, _, m in memories if w == who and not m.sensitive]
            assert who in secret.content
            assert set(secret.tags) & {t for m in theirs for t in m.tags}
            words = {w.lower() for w in re.findall(r"\w{3,}", secret.content)} - {who.lower()}
            sharing += any(words & {w.lower() for w in re.findall(r"\w{3,}", m.content)}
                           for m in theirs)
        assert sharing >= 2 * (len(secrets) - 1), language  # all but the medication
        harmless += len(speakers) * sum(len(q) for *_, q in facts)
    assert harmless >= 400


def test_the_subject_class_names_its_subject_only_in_the_secret():
    """Issue 67's class: each harmless question names a word of its secret that no ordinary
    memory of the namespace holds (so the words rule of decision 0015 lets the secret
    through), and its answer is an ordinary memory; every subject is held by someone in
    every language, and the class has at least 80 harmless questions."""
    harmless = 0
    for language, (_, _, subjects, speakers) in LANGUAGES.items():
        people = people_fields(language)
        held = set()
        for n in range(0, len(speakers), 2):
            pair = [people[i] for i in speakers][n:n + 2]
            memories = namespace_memories(pair, language)
            ordinary = set().union(*(words(m.content) for _, _, m in memories
                                     if not m.sensitive))
            for fields in pair:
                for key, _, secret, about, asking in subjects_of(fields, language):
                    held.add(key)
                    only_secret = words(secret.format(**fields)) - ordinary
                    for question in about:
                        assert words(question.format(**fields)) & only_secret, question
                    harmless += len(about)
                    assert len(asking) == 2
        assert held == {key for key, *_ in subjects}, language
    assert harmless >= 80


def test_the_report_counts_leaks_within_3_and_10():
    rows = [Asked("ns", "Jonas", "work", "Where does Jonas work?", True, 1, 0),
            Asked("ns", "Jonas", "home", "Which city?", True, 1, 2),
            Asked("ns", "Jonas", "food", "Food?", True, 2, 7),
            Asked("ns", "Jonas", "vpn", "VPN password?", False, 1, 1)]
    for key, *_ in (*FACTS, *SECRETS):  # the report lists every kind
        if key not in {r.key for r in rows}:
            rows.append(Asked("ns", "Jonas", key, "?", key not in {k for k, *_ in SECRETS},
                              1, 0))
    text = report(rows, [], 1.0)
    first3 = next(line for line in text.splitlines() if line.startswith("| all"))
    assert first3.startswith("| all | 12 | 1 of 12 (8.3%) | 2 of 12 (16.7%) | 11 of 12 (91.7%) "
                             "| 5 | 5 of 5 (100.0%) |"), first3
    assert "'Which city?': a secret at rank 2" in text
    rows.append(Asked("ns", "Jonas", "bike", "Where does Jonas keep the bike?", True, 1, 2,
                      kind=SUBJECT_WORD))
    text = report(rows, [], 1.0)
    line = next(x for x in text.splitlines() if x.startswith(f"| {SUBJECT_WORD}"))
    assert line.startswith(f"| {SUBJECT_WORD} | 1 | 1 of 1 (100.0%)"), line
