"""Two runs of the same configurations on the same dataset, each with another embedding model
(or any other deployment setting a configuration name does not carry), paired query by query.

  python -m benchmarks.quality.model_pair --base OUTDIR_A --other OUTDIR_B --label int8 \
      [--other OUTDIR_C --label mpnet ...] \
      --into OUTDIR

OUTDIR receives every result file of the base run as it is and every result file of the other
run with its configuration renamed `<config>@<label>` (the file keeps its own model_id, commit
and settings, and records the name it ran under in `renamed_from`). Then `python -m benchmarks
compare OUTDIR --baseline default` pairs `default@int8` with `default` per query (paired
bootstrap CIs, per category) like any two configurations of one run. Only quality pairs this
way: the two runs' latencies come from two runs and are not compared.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.harness.report import load_results


def pair(base: Path, others: list[tuple[Path, str]], into: Path) -> list[str]:
    """Write the base run's result files and each other run's, renamed `<config>@<label>`,
    into `into` (emptied first); the names written."""
    a = load_results(base)
    runs = [(load_results(path), label) for path, label in others]
    if not a or not all(b for b, _ in runs):
        raise SystemExit(f"no result files in {base} or one of {[str(p) for p, _ in others]}")
    datasets = {r["dataset"]["files_sha256"] for r in a.values()} | {
        r["dataset"]["files_sha256"] for b, _ in runs for r in b.values()}
    if len(datasets) != 1:
        raise SystemExit("the runs are not on the same dataset files")
    into.mkdir(parents=True, exist_ok=True)
    for stale in into.glob("*.json"):
        stale.unlink()
    written = []
    for name, data in a.items():
        (into / f"{name}.json").write_text(json.dumps(data))
        written.append(name)
    for b, label in runs:
        for name, data in b.items():
            renamed = f"{name}@{label}"
            (into / f"{renamed}.json").write_text(
                json.dumps({**data, "config": renamed, "renamed_from": name}))
            written.append(renamed)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--other", type=Path, action="append", required=True,
                        help="another run (repeat for several, each with its --label)")
    parser.add_argument("--label", action="append", required=True,
                        help="suffix of that run's configurations")
    parser.add_argument("--into", type=Path, required=True)
    args = parser.parse_args(argv)
    if len(args.other) != len(args.label):
        parser.error("give one --label per --other")
    names = pair(args.base, list(zip(args.other, args.label, strict=True)), args.into)
    print(f"{args.into}: {', '.join(names)}")


if __name__ == "__main__":
    main()
