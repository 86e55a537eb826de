"""Query-intent routing: deterministic English rules that read what kind of question a recall
query is and set the request's fusion for it. No model; one regular expression per intent.

One intent so far, `advice`: the user asks for tips, suggestions, recommendations or an
opinion on what to do ("Any tips for keeping my kitchen clean?", "Can you recommend a show
for tonight?", "Should I attend my reunion?"). What answers such a request is what the
agent has learned about the user's tastes and circumstances ("I've been into documentaries
about nature lately"), told earlier in other words than the question's. So the route:

- weights the lexical leg at most ADVICE_LEXICAL_WEIGHT (the vector leg keeps its weight): the
  question's words ("tips", "tonight", "any") match the memories that talk about the same
  plan, not the preference behind it; the lexical candidates stay in the fused pool;
- turns context propagation off: the memory stored next to a matched one continues that
  conversation, it is not another preference;
- turns the time-window boost off: a time an advice request names ("this weekend",
  "tonight") is when the plan happens, not when the memory was told.

On the development splits the rule fires on nearly every preference question and on almost no
other (docs/decisions/0017-smaller-settings-and-limits.md has the counts).

What a request sets itself wins over the route: an explicit `fusion.weights["lexical"]`,
`fusion.context_hits` or `fusion.time_boost` is kept; `fusion.intent_routing = false` (or
RECALLMESH_INTENT_ROUTING=false for the deployment) turns routing off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from recallmesh.policy import Overrides
from recallmesh.shared.legs import LEXICAL_LEG

ADVICE = "advice"
ADVICE_LEXICAL_WEIGHT = 0.1

_ADVICE_RULE = re.compile(
    r"""\b(?:
        any\s+(?:\w+\s+){0,2}(?:tips|advice|suggestions?|recommendations?|ideas|thoughts)\b
      | (?:can|could|would)\s+you\s+(?:please\s+)?
            (?:recommend|suggest|give\s+me\s+(?:some\s+)?(?:tips|advice|ideas))\b
      | do\s+you\s+have\s+any\s+(?:\w+\s+){0,2}
            (?:tips|advice|suggestions?|recommendations?|ideas)\b
      | what\s+(?:do|would)\s+you\s+(?:think|suggest|recommend)\b
      | do\s+you\s+think\b
      | should\s+i\b
      | (?:^|(?<=[.!?]\s))(?:please\s+)?(?:recommend|suggest)\s+(?:me\s+)?(?:some|a|an)\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True)
class Route:
    """What an intent changes in a request's fusion (None: nothing)."""

    intent: str
    phrase: str  # the words of the query the rule matched, for explain
    lexical_weight: float | None = None
    context_hits: int | None = None
    time_boost: float | None = None

    def overrides(self) -> Overrides:
        """The route as policy overrides (RecallPolicy.resolve: a request's own settings win;
        the lexical weight is a cap on the deployment's)."""
        return Overrides.of(weights=({} if self.lexical_weight is None
                                     else {LEXICAL_LEG: self.lexical_weight}),
                            context_hits=self.context_hits, time_boost=self.time_boost)


def route(query: str) -> Route | None:
    """The route for `query`, or None when no intent rule matches it."""
    match = _ADVICE_RULE.search(query)
    if match is None:
        return None
    phrase = " ".join(match.group(0).lower().split())
    return Route(ADVICE, phrase, lexical_weight=ADVICE_LEXICAL_WEIGHT, context_hits=0,
                 time_boost=0.0)
