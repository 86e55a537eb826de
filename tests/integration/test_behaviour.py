"""The behaviour suite (tests/behaviour): every case stored one memory at a time into a stack
of its own and recalled with the deployment's defaults; the expected memory must come at rank
1, or in the top 3 where the case says so. `python -m benchmarks behaviour` runs the same cases
on a stack of its own for several configurations and writes benchmarks/reports/behaviour.md."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psycopg
import pytest

from recallmesh.client import NO_RETRIES
from recallmesh.migrations.bm25_index import INDEX_NAME
from recallmesh.stack.supervisor import Stack
from tests.behaviour.cases import ALL_CASES, STABLE_WITHIN, Case
from tests.behaviour.suite import CaseResult, ask, load_cases
from tests.fixtures import scratch_database, stack_env

pytestmark = pytest.mark.integration

# Cases the shipped default fails (`make bench-behaviour` shows where the memory came): strict,
# so a case that starts passing fails here until it is taken off this list.
KNOWN_FAILURES: dict[str, str] = {
    "unanswerable: a fact never told": (
        "the best of 20 unrelated memories for 'What is the user's blood type?' is estimated "
        "0.088, above the 0.075 floor: the estimate is fitted out of fold on the evidence "
        "sets, and a threshold moved until this case passes would be one tuned to it "
        "(docs/decisions/0012, issue 55)"),
    # Context (docs/decisions/0014): the best memory of a namespace about one person is
    # estimated 0.08-0.13 for these questions, as high as the relevant memories of MADial's
    # answerable questions; no cut on the estimate that empties these blocks keeps 95% of the
    # answers Context packs today on every evidence set (benchmarks/reports/context_curve.md).
    "context: off-topic, a capital": "packs 'Maya lives in Lisbon ...' (estimate 0.099)",
    "context: off-topic, a poem": "packs 'Maya reads science fiction ...' (estimate 0.118)",
    "context: off-topic, another person's": "packs 'Jonas lives in Hamburg ...' (0.125)",
    "context: cooking for her, in Portuguese": (
        "packs her GitHub handle alone (0.080): the English model's cosine of a short memory "
        "that holds only her name"),
    "context: cooking for her, in German": "an empty block: no food memory reaches the floor",
    # Task prompts (issue 66, docs/decisions/0022): the shipped ranker gives the lexical leg's
    # best hit a full share however weak, and no ranker of these two legs that fixes the tasks
    # holds on the other splits (benchmarks/reports/decision.md).
    "task: a table for dinner, not the book club": (
        "'book' puts the book club first; the shellfish allergy comes 8th"),
    "task: plan a trip, not the instrument he plays": (
        "'plan' is no longer read as 'play' (decision 0021), but the vector leg ranks "
        "'Aiko is vegetarian.' first and the mountain towns 4th"),
    "task: a table for dinner, in German": "'Freitag' puts working from home first",
    "task: a table for dinner, in Spanish": "'viernes' puts working from home first",
    # A subject only the secret names, read in meaning (docs/decisions/0023): the English model
    # reads 'Rad' / 'bici' nearer the secret that holds the word than the ordinary memory that
    # says 'Fahrrad' / 'bicicleta', so the secret is the nearest memory and is kept.
    "harmless: a subject only the secret names, in German": (
        "the bike lock's combination comes first: the model reads 'Rad' nearer it than "
        "'Fahrrad'"),
    "harmless: a subject only the secret names, in Spanish": (
        "the bike lock's combination comes first: the model reads 'bici' nearer it than "
        "'bicicleta'"),
    # A task's need in the vector leg's own order (decision 0022): not a tie.
    "two sharing a name: a task, dinner": (
        "the vector leg puts 'Lena's car is a blue Golf.' first (cosine 0.671 against the "
        "vegan memory's 0.668): nothing in either leg reads 'dinner' as a diet"),
}
@pytest.fixture(scope="module")
def answers(admin_dsn: str, pg_dir: Path) -> dict[str, CaseResult]:
    """The cases on a stack and database of their own with the deployment's defaults: their
    3,000 memories (and the indexer's concept work on them) never reach the session's stack."""
    with scratch_database(admin_dsn) as dsn:
        stack = Stack(env=stack_env(pg_dir / "behaviour", dsn))
        stack.start(timeout_s=90)
        try:
            with stack.client(retry=NO_RETRIES) as gateway:
                loaded = load_cases(gateway, ALL_CASES, f"behaviour-{uuid.uuid4().hex[:8]}")
                return {case.name: ask(gateway, ns, case, ids) for case, ns, ids in loaded}
        finally:
            stack.stop()


@pytest.mark.timeout(900)  # the first case also stores every case (about 3,000 memories)
@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[c.name])]
                 if c.name in KNOWN_FAILURES else [])
    for c in ALL_CASES])
def test_the_expected_memory_is_found(case: Case, answers: dict[str, CaseResult]) -> None:
    result = answers[case.name]
    assert result.passed, (f"{case.query!r}: the expected memory came "
                           f"{result.rank or 'not among the hits'} (wanted within "
                           f"{case.within}), an unwanted one at {result.intruder or '-'}; "
                           f"first: {result.top}")


def test_every_known_failure_names_a_case() -> None:
    assert set(KNOWN_FAILURES) <= {c.name for c in ALL_CASES}
    assert len(ALL_CASES) >= 40 and len({c.name for c in ALL_CASES}) == len(ALL_CASES)


def test_one_memory_scores_alike_in_namespaces_of_every_size(
        answers: dict[str, CaseResult]) -> None:
    """A score means the same whatever else the namespace holds (1, ~25 or ~3,000 memories)."""
    groups: dict[str, list[float]] = {}
    for case in ALL_CASES:
        if case.stability:
            groups.setdefault(case.stability, []).append(answers[case.name].score)
    assert groups and all(len(scores) == 3 for scores in groups.values())
    for group, scores in groups.items():
        assert min(scores) > 0 and max(scores) - min(scores) <= STABLE_WITHIN, (group, scores)


# The kinds whose answers hang most on the lexical leg: through the BM25 index they must answer
# as through the SQL statement (docs/decisions/0018-bm25-index.md).
THROUGH_THE_INDEX = ("code word", "identifier", "multilingual", "typo", "sensitive", "filters",
                     "harmless", "negation", "one word", "superseded")


@pytest.fixture(scope="module")
def answers_by_index(bm25_admin_dsn: str, pg_dir: Path) -> dict[str, CaseResult]:
    """Those kinds' cases with every BM25 query the index can answer sent to it (on the
    session's server with pg_textsearch)."""
    cases = [c for c in ALL_CASES if c.kind in THROUGH_THE_INDEX]
    with scratch_database(bm25_admin_dsn) as dsn:
        stack = Stack(env=stack_env(pg_dir / "behaviour-index", dsn,
                                    RECALLMESH_LEXICAL_BM25_INDEX_MIN_POSTINGS="0"))
        stack.start(timeout_s=90)
        try:
            with stack.client(retry=NO_RETRIES) as gateway:
                loaded = load_cases(gateway, cases, f"behaviour-index-{uuid.uuid4().hex[:8]}")
                with psycopg.connect(dsn, autocommit=True) as conn:
                    # the table's size, as autovacuum would have it: a scan that ran to its end
                    # in a small table answers (recallmesh.services.lexical.bm25_index.complete)
                    conn.execute("ANALYZE memories")
                    answers = {case.name: ask(gateway, ns, case, ids)
                               for case, ns, ids in loaded}
                    time.sleep(2)  # the leg's backend reports its counts within a second idle
                    scans = conn.execute(
                        "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
                        (INDEX_NAME,)).fetchone()
                INDEX_SCANS["behaviour"] = int(scans[0]) if scans else 0
                return answers
        finally:
            stack.stop()


INDEX_SCANS: dict[str, int] = {}


@pytest.mark.timeout(600)  # the first to ask loads the cases
def test_the_index_answered(answers_by_index: dict[str, CaseResult]) -> None:
    assert INDEX_SCANS["behaviour"] > 0  # the leg searched the index (not the SQL statement only)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[c.name])]
                 if c.name in KNOWN_FAILURES else [])
    for c in ALL_CASES if c.kind in THROUGH_THE_INDEX])
def test_through_the_bm25_index(case: Case, answers_by_index: dict[str, CaseResult]
                                ) -> None:
    result = answers_by_index[case.name]
    assert result.passed, (f"{case.query!r} through the BM25 index: the expected memory came "
                           f"{result.rank or 'not among the hits'} (wanted within "
                           f"{case.within}), an unwanted one at {result.intruder or '-'}; "
                           f"first: {result.top}")
