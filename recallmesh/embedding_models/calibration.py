"""What an embedding model's scores mean: its score calibration, fitted on the development
splits and shipped in the model's catalogue entry
(recallmesh/embedding_models/catalogue/<name>.json,
key "calibration"), looked up by the model id stored beside every vector.

    "calibration": {
      "cosine_floor": 0.52,     the cosine an unrelated memory typically gets from a query
      "intercept": -4.1,        relevance = 1 / (1 + exp(-(intercept + slope x share)))
      "slope": 6.3,
      "fitted_on": "..."        which splits and which report
    }

`cosine_floor` is what calibrated fusion measures the vector leg's cosine from, (cos - floor)
/ (1 - floor), instead of from each list's own median, so a memory's vector evidence is the
same whatever else its namespace holds. `relevance` maps a recall's fused share (the fused
score over the summed weights of the legs that answered) to an estimate of the probability
that the memory is relevant: the score Recall and Context return, and what min_score cuts.

A model without a calibration (not fitted, or a manifest of one's own) keeps the list-median
measure and returns the fused share itself; a deployment's min_score then applies to that.
Imports nothing above the platform floor.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class ScoreCalibration:
    cosine_floor: float
    intercept: float
    slope: float
    fitted_on: str = ""

    def relevance(self, share: float) -> float:
        """The estimated probability that a hit of fused share `share` is relevant."""
        z = self.intercept + self.slope * share
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ScoreCalibration:
        values = {name: float(raw[name]) for name in ("cosine_floor", "intercept", "slope")}
        if not all(math.isfinite(v) for v in values.values()):
            raise ValueError("calibration values must be finite")
        if not -1.0 <= values["cosine_floor"] < 1.0:
            raise ValueError("cosine_floor must be within [-1, 1)")
        return cls(**values, fitted_on=str(raw.get("fitted_on", "")))


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
