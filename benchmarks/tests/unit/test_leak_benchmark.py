"""The leak benchmark's data and report (benchmarks/behaviour/leak.py), without a stack."""

from __future__ import annotations

from benchmarks.behaviour.leak import (
    FACTS,
    LANGUAGES,
    SECRETS,
    Asked,
    namespace_memories,
    people_fields,
    report,
)


def test_every_person_has_every_memory_and_secrets_share_names_tags_and_words():
    """Each language's secrets share the person's name, an ordinary memory's tag and an
    everyday word with that person's ordinary memories; 400 harmless questions or more."""
    import re

    harmless = 0
    for language, (facts, secrets, speakers) in LANGUAGES.items():
        people = people_fields(language)
        assert len(people) == 20 and len({p["name"] for p in people}) == 20
        memories = namespace_memories(people[:2], language)
        assert len(memories) == 2 * (len(facts) + len(secrets))
        kept = [(who, m) for who, _, m in memories if m.sensitive]
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
