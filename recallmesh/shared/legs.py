"""The retrieval legs' names. A leg is any RetrieverService a deployment names in
RECALLMESH_LEGS (a leg of its own, at an address of its own, is as welcome as the three built
in), so a leg's name is an open set of strings: `LegName`. The built-in legs the product reads by
name are these constants, defined once, here on the ground floor where every floor can name them
(docs/reference/layout.md)."""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

LegName: TypeAlias = str  # any leg RECALLMESH_LEGS names; the built-in ones below

LEXICAL_LEG: Final = "lexical"  # Postgres full text: the leg that also searches sensitive memories
VECTOR_LEG: Final = "vector"  # the leg searched by meaning (its best hit: the nearest memory)
GRAPH_LEG: Final = "graph"  # the concept graph; the leg the graph second stage asks again
BUILT_IN_LEGS: Final = (LEXICAL_LEG, VECTOR_LEG, GRAPH_LEG)

# What became of one leg in one recall (the wire's LegState; recallmesh/wire/enums.py refuses to
# import where the names differ from the protos').
LegState = Literal["OK", "TIMEOUT", "ERROR", "SKIPPED"]
LEG_STATES: tuple[LegState, ...] = get_args(LegState)
