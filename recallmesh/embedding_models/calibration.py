"""What an embedding model's scores mean: its score calibration, fitted on the development
splits and shipped in the model's catalogue entry
(recallmesh/embedding_models/catalogue/<name>.json, key "calibration"), looked up by the model
id stored beside every vector.

    "calibration": {
      "cosine_floor": 0.52,     the cosine an unrelated memory typically gets from a query
      "relevance": {            relevance = 1 / (1 + exp(-(intercept + sum of weight x feature)))
        "intercept": -4.1,
        "weights": {"cosine": 9.0, "lexical": 2.5, ...}
      },
      "fitted_on": "..."        which splits and which report
    }

`cosine_floor` is the cosine an unrelated memory typically gets; calibrated fusion measures the
vector leg's cosine from it, and the relevance estimate reads a cosine as its margin over it.
`relevance` is the estimate that a hit is relevant, on one scale for every query and namespace:
a logistic model of the hit's evidence (RELEVANCE_FEATURES, read from the leg lists by
recallmesh/gateway/stages.py), fitted out of fold on the dev splits
(benchmarks/quality/relevance.py; docs/decisions/0012-ranking-apart-from-scoring.md). It is what
Recall and Context return as a hit's score, and what min_score cuts.

A model without a calibration (not fitted, or a manifest of one's own) keeps the ranker's score
(calibrated fusion measures cosine from each list's median instead); a deployment's min_score
then applies to calibrated fusion's share alone.
Imports nothing above the platform floor.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from recallmesh.shared.legs import LEXICAL_LEG, VECTOR_LEG, LegName

# What the relevance model reads of a hit (recallmesh/gateway/stages.py `evidence`):
#   cosine      its cosine minus the model's cosine_floor
#   cosine_gap  its cosine minus the best cosine of the vector leg's list (0 for the best)
#   lexical     its BM25 over the query's summed idf, at most 1 (0 where no query term matched)
#   lexical_gap its lexical share minus the best share of the lexical leg's list
#   rank        log of its place in the ranked list (0 for the first)
#   context     1 when a hit stored next to it lent it a share of its score, else 0
RELEVANCE_FEATURES = ("cosine", "cosine_gap", "lexical", "lexical_gap", "rank", "context")
# The features each leg gives: absent from a hit's evidence where that leg cannot see the hit
# (the vector leg and a sensitive memory) or did not answer. Such a hit is estimated by the
# model fitted without them (RelevanceModel.without, keyed by the missing legs in name order,
# joined with ","): a blind leg is left out, not counted as if it had seen an unrelated memory.
LEG_FEATURES: dict[LegName, tuple[str, ...]] = {LEXICAL_LEG: ("lexical", "lexical_gap"),
                                                 VECTOR_LEG: ("cosine", "cosine_gap")}


def missing_legs(evidence: Mapping[str, float]) -> str:
    """The legs whose features `evidence` lacks, as RelevanceModel.without keys them."""
    return ",".join(leg for leg, names in sorted(LEG_FEATURES.items())
                    if not any(n in evidence for n in names))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@dataclass(frozen=True)
class RelevanceModel:
    intercept: float
    weights: Mapping[str, float] = field(default_factory=dict)  # by RELEVANCE_FEATURES name
    # the models fitted without some legs' features, by those legs (missing_legs)
    without: Mapping[str, RelevanceModel] = field(default_factory=dict)

    def probability(self, evidence: Mapping[str, float]) -> float:
        """The estimated probability that a hit with this evidence is relevant (by the model
        fitted without the legs `evidence` lacks, where there is one)."""
        missing = missing_legs(evidence)
        model = self.without.get(missing, self) if missing else self
        return _sigmoid(model.intercept + sum(w * evidence.get(name, 0.0)
                                              for name, w in model.weights.items()))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RelevanceModel:
        intercept = float(raw["intercept"])
        weights = {str(k): float(v) for k, v in raw.get("weights", {}).items()}
        unknown = sorted(set(weights) - set(RELEVANCE_FEATURES))
        if unknown:
            raise ValueError(f"unknown relevance features {unknown}; known: "
                             f"{', '.join(RELEVANCE_FEATURES)}")
        if not all(math.isfinite(v) for v in (intercept, *weights.values())):
            raise ValueError("relevance model values must be finite")
        without = {str(k): cls.from_dict(v) for k, v in raw.get("without", {}).items()}
        for key, model in without.items():
            legs = key.split(",")
            if not set(legs) <= set(LEG_FEATURES) or any(
                    n in model.weights for leg in legs for n in LEG_FEATURES[leg]):
                raise ValueError(f"a relevance model without {key!r} must name legs of "
                                 f"{', '.join(LEG_FEATURES)} and leave out their features")
        return cls(intercept, weights, without)


@dataclass(frozen=True)
class ScoreCalibration:
    cosine_floor: float
    relevance: RelevanceModel
    fitted_on: str = ""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ScoreCalibration:
        floor = float(raw["cosine_floor"])
        if not (math.isfinite(floor) and -1.0 <= floor < 1.0):
            raise ValueError("cosine_floor must be within [-1, 1)")
        return cls(floor, RelevanceModel.from_dict(raw["relevance"]),
                   fitted_on=str(raw.get("fitted_on", "")))


@functools.cache
def _by_model_id() -> dict[str, ScoreCalibration]:
    found: dict[str, ScoreCalibration] = {}
    for entry in resources.files("recallmesh.embedding_models.catalogue").iterdir():
        if not entry.name.endswith(".json"):
            continue
        raw = json.loads(entry.read_text())
        if "calibration" in raw:
            found[raw["manifest"]["model_id"]] = ScoreCalibration.from_dict(raw["calibration"])
    return found


def calibration_for(model_id: str) -> ScoreCalibration | None:
    """The shipped calibration of the model stored as `model_id`, None when it has none."""
    return _by_model_id().get(model_id)
