"""The retrieval legs' names. A leg is any RetrieverService a deployment names in
RECALLMESH_LEGS (a leg of its own, at an address of its own, is as welcome as the three built
in), so a leg's name is an open set of strings: `LegName`. The built-in legs the product reads by
name are these constants, defined once, here on the ground floor where every floor can name them
(docs/architecture.md); and the legs a deployment runs, RECALLMESH_LEGS, are read here
(docs/configuration.md)."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

from recallmesh.shared.settings import ConfigError, env_str

LegName: TypeAlias = str  # any leg RECALLMESH_LEGS names; the built-in ones below

LEXICAL_LEG: Final = "lexical"  # Postgres full text: the leg that also searches sensitive memories
VECTOR_LEG: Final = "vector"  # the leg searched by meaning (its best hit: the nearest memory)
GRAPH_LEG: Final = "graph"  # the concept graph; the leg the graph second stage asks again
BUILT_IN_LEGS: Final = (LEXICAL_LEG, VECTOR_LEG, GRAPH_LEG)
# The legs a gateway fans out to unless RECALLMESH_LEGS says otherwise. The graph leg runs
# in every stack but is not among them (docs/decisions/0010-graph-stays-opt-in.md);
# RECALLMESH_LEGS=lexical,vector,graph turns it on. Every service reads the same variable
# (the indexer extracts concepts only for a graph leg that is asked: docs/decisions/0025).
DEFAULT_LEGS: Final = f"{LEXICAL_LEG},{VECTOR_LEG}"

# What became of one leg in one recall (the wire's LegState; recallmesh/wire/enums.py refuses to
# import where the names differ from the protos').
LegState = Literal["OK", "TIMEOUT", "ERROR", "SKIPPED"]
LEG_STATES: tuple[LegState, ...] = get_args(LegState)
# A leg asked that gave no answer: the recall is degraded (SKIPPED was not asked).
FAILED_LEG_STATES: tuple[LegState, ...] = ("TIMEOUT", "ERROR")


def leg_names(raw: str | None = None) -> list[LegName]:
    """The legs RECALLMESH_LEGS names (`raw`, else the environment's, else DEFAULT_LEGS), in
    order; ConfigError when it names none or one twice."""
    raw = env_str("RECALLMESH_LEGS", DEFAULT_LEGS) if raw is None else raw
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        raise ConfigError("RECALLMESH_LEGS names no leg")
    if len(set(names)) != len(names):
        raise ConfigError(f"RECALLMESH_LEGS names a leg twice: {raw!r}")
    return names
