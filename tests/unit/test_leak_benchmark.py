"""The leak benchmark's data and report (benchmarks/behaviour/leak.py), without a stack."""

from __future__ import annotations

from benchmarks.behaviour.leak import (
    FACTS,
    PEOPLE,
    SECRETS,
    Asked,
    namespace_memories,
    people_fields,
    report,
)


def test_every_person_has_every_memory_and_secrets_share_names_and_tags():
    people = people_fields()
    assert len(people) == 20 and len({p["name"] for p in people}) == 20
    memories = namespace_memories(people[:2])
    assert len(memories) == 2 * (len(FACTS) + len(SECRETS))
    secrets = [m for _, _, m in memories if m.sensitive]
    ordinary_tags = {t for _, _, m in memories if not m.sensitive for t in m.tags}
    assert len(secrets) == 2 * len(SECRETS)
    for secret in secrets:
        assert any(p["name"] in secret.content for p in people[:2])
        assert set(secret.tags) & ordinary_tags  # shares a tag with ordinary memories
    harmless = [q.format(**people[0]) for *_, q in FACTS]
    assert len(harmless) * len(PEOPLE) == 200


def test_the_report_counts_leaks_within_3_and_10():
    rows = [Asked("ns", "Jonas", "work", "Where does Jonas work?", True, 1, 0),
            Asked("ns", "Jonas", "home", "Which city?", True, 1, 2),
            Asked("ns", "Jonas", "food", "Food?", True, 2, 7),
            Asked("ns", "Jonas", "vpn", "VPN password?", False, 1, 1)]
    for key, *_ in (*FACTS, *SECRETS):  # the report lists every kind
        if key not in {r.key for r in rows}:
            rows.append(Asked("ns", "Jonas", key, "?", key not in {"vpn", "pin", "medication"},
                              1, 0))
    text = report(rows, [], 1.0)
    first3 = next(line for line in text.splitlines() if line.startswith("| harmless"))
    assert "| 1 of 10 (10.0%) | 2 of 10 (20.0%) | 9 of 10 (90.0%) |" in first3
    assert "'Which city?': a secret at rank 2" in text
