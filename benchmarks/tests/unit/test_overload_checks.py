"""bench-overload's required checks judged on made-up steps (no stack)."""

from __future__ import annotations

from benchmarks.performance.overload import checks, late_share, parse_args

WRITES = {"checked_live": 10, "lost": 0, "content_changed": 0, "unverified": 0,
          "deleted_but_found": 0, "unverified_codes": {}, "stores_unknown_outcome": 0}


def step(clients: int, goodput: float, ok: int, late: int = 0, slowest: float = 900.0,
         server_over: float = 0.0) -> dict:
    recall = {"OK": ok, **({"DEADLINE_EXCEEDED": late} if late else {})}
    return {"clients": clients, "goodput_per_s": goodput, "recall_max_ms": slowest,
            "codes": dict(recall), "codes_by_op": {"recall": recall},
            "loop_lag": {"max_ms": 200.0},
            "server_recall": {"answered": ok, "slower_than_s": 1.0, "slower": server_over}}


def verdicts(steps: list[dict], *argv: str) -> dict[str, bool]:
    args = parse_args(["--steps", ",".join(str(s["clients"]) for s in steps), *argv])
    return {name.split(" (")[0]: ok for name, ok, _ in
            checks(steps, WRITES, args, 1050.0, {"events": []})}


def test_late_recalls_are_judged_per_step_against_the_error_budget():
    assert late_share(step(10, 90, 990, late=10)) == 0.01
    ok = verdicts([step(10, 90, 1000), step(500, 95, 995, late=5)])
    assert ok["recalls past their deadline"] and ok["answered recalls within budget + margin"]
    over = verdicts([step(10, 90, 1000, late=2), step(500, 95, 980, late=20)])
    assert not over["recalls past their deadline"]  # 2% at 500 clients
    assert verdicts([step(1, 10, 100, late=2)], "--max-late-share", "0.05")[
        "recalls past their deadline"]


def test_a_late_answer_and_a_collapse_fail():
    # judged on the gateway's own time: a client-side 1,100 ms (its loop lag) passes ...
    assert verdicts([step(10, 100, 1000, slowest=1100.0)])[
        "answered recalls within budget + margin"]
    # ... one recall over the deadline's bucket on the gateway's clock does not
    ok = verdicts([step(10, 100, 1000, server_over=1), step(500, 79, 1000)])
    assert not ok["answered recalls within budget + margin"]
    assert not ok["goodput plateaus"]
    assert ok["zero INTERNAL"] and ok["zero lost writes"]


def test_a_recall_failed_as_database_late_fails_with_the_database_up():
    from benchmarks.harness.load import Outcome, summarize, unavailable_cause

    assert unavailable_cause("database did not answer within 60 ms after the retrieval legs, "
                             "retry") == "database late"
    assert unavailable_cause("no retrieval leg answered: lexical (TIMEOUT: x)") == \
        "no leg answered"
    assert unavailable_cause("database unavailable, retry (PoolTimeout)") == \
        "database unavailable"
    assert unavailable_cause("something else") == "other"
    failed = summarize([Outcome("recall", "UNAVAILABLE", 0.0, 0.1,
                                detail="database did not answer within the recall's budget, "
                                       "retry"),
                        Outcome("recall", "UNAVAILABLE", 0.0, 0.1,
                                detail="no retrieval leg answered: lexical (TIMEOUT: x)"),
                        Outcome("store", "UNAVAILABLE", 0.0, 0.1,
                                detail="database did not answer")], 1.0)
    assert failed["recall_unavailable"] == {"database late": 1, "no leg answered": 1}
    name = "no recall UNAVAILABLE as 'database did not answer'"
    late = {**step(10, 90, 1000), "recall_unavailable": failed["recall_unavailable"]}
    assert not verdicts([late])[name]
    no_leg = {**step(10, 90, 1000), "recall_unavailable": {"no leg answered": 3}}
    assert verdicts([no_leg, step(50, 95, 1000)])[name]
