"""Give a run's results the name `default` when the deployment default changes to the settings
one of its configurations ran with, instead of loading the dataset again.

  python -m benchmarks.quality.relabel OUTDIR [OUTDIR...] --from default_lw0.7 \
      --displaced-as default_lw1

A configuration that differs from `default` only in settings the deployment now has as its
defaults (the same legs, per-leg weights equal to
recallmesh.policy.DEFAULT_LEG_WEIGHTS, nothing else set; no lexical weight at all,
since query-intent routing sets that one only when a request
leaves it unset) asks the gateway for exactly what `default` now gets with no overrides, so its
ranking is the same query by query. `OUTDIR/<from>.json` becomes `OUTDIR/default.json`, and the
old `default.json` (run under the previous deployment default) becomes `<displaced-as>.json`.
The first half is checked here. The second is the caller's word: a result file does not hold
the gateway's defaults, so each moved file gets a `relabelled` entry with the name it ran under
and its git commit, which a reader can check against that commit's
recallmesh/policy.py. Nothing
is moved unless every folder has both files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.harness.configs import CONFIGS, Config
from recallmesh.policy import DEFAULT_LEG_WEIGHTS
from recallmesh.shared.legs import DEFAULT_LEGS

TARGET = "default"


def same_as_default(config: Config) -> bool:
    """True when the request overrides of `config` select what the deployment serves with none:
    the default legs, weights equal to the default weights, no other setting touched."""
    legs = tuple(DEFAULT_LEGS.split(","))
    if config.legs != legs:
        return False
    if config.fusion.values:  # a setting pinned
        return False
    if "lexical" in config.weights:  # the intent route sets the lexical weight only when unset
        return False
    return all(config.weights.get(leg, DEFAULT_LEG_WEIGHTS.get(leg, 1.0))
               == DEFAULT_LEG_WEIGHTS.get(leg, 1.0) for leg in legs)


def missing(folder: Path, source: str) -> list[Path]:
    """The result files a relabel of `folder` needs and does not find."""
    return [p for p in (folder / f"{source}.json", folder / f"{TARGET}.json") if not p.is_file()]


def relabel(folder: Path, source: str, displaced_as: str) -> None:
    if absent := missing(folder, source):
        raise SystemExit(f"missing {', '.join(map(str, absent))}")
    src, old = folder / f"{source}.json", folder / f"{TARGET}.json"
    previous = json.loads(old.read_text())
    renamed = json.loads(src.read_text())
    previous["relabelled"] = {"ran_as": TARGET, "git_commit": previous.get("git_commit"),
                              "why": f"the deployment default changed; this run is now "
                                     f"`{displaced_as}`"}
    previous["config"], previous["settings"] = displaced_as, CONFIGS[displaced_as].settings()
    renamed["relabelled"] = {"ran_as": source, "git_commit": renamed.get("git_commit"),
                             "why": f"`{source}` asked for what `{TARGET}` now serves"}
    renamed["config"], renamed["settings"] = TARGET, CONFIGS[TARGET].settings()
    (folder / f"{displaced_as}.json").write_text(json.dumps(previous, indent=1))
    old.write_text(json.dumps(renamed, indent=1))
    src.unlink()
    print(f"{folder}: {source} -> {TARGET}, previous {TARGET} -> {displaced_as}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality.relabel",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--from", dest="source", required=True)
    parser.add_argument("--displaced-as", required=True)
    args = parser.parse_args(argv)
    for name in (args.source, args.displaced_as):
        if name not in CONFIGS:
            parser.error(f"unknown configuration {name!r}")
    if not same_as_default(CONFIGS[args.source]):
        parser.error(f"{args.source!r} does not ask for what `{TARGET}` serves now "
                     f"(default weights {DEFAULT_LEG_WEIGHTS})")
    if same_as_default(CONFIGS[args.displaced_as]):
        parser.error(f"{args.displaced_as!r} is the default now; name the previous setting")
    absent = [p for folder in args.folders for p in missing(folder, args.source)]
    if absent:  # every folder is checked before anything moves
        parser.error(f"missing {', '.join(map(str, absent))}")
    for folder in args.folders:
        relabel(folder, args.source, args.displaced_as)


if __name__ == "__main__":
    main()
