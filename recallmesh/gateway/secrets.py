"""Whether a recall asks for a secret, read in meaning (docs/decisions/0023).

The lexical leg returns a sensitive memory only when the question names something that only a
secret holds (docs/decisions/0015-secrets-on-what-only-they-hold.md, `asks_for_secret`). That
reads words: a question about a subject that only the secret names ("Where does Ana keep her
bike?", where the secret is "Ana's bike lock combination is 4-1-7-2" and the ordinary memory
says "Ana leaves her bicycle in the hallway") passes it. The gateway then reads the question's
meaning beside the secret's: the secret stays only when **no ordinary memory is as near the
question as the secret is** (`asked_in_meaning`). A question about the subject is answered by
what the ordinary memories say of it, in their own words; a question that asks for what the
secret guards (the combination, the password, the diagnosis) is nearer the secret than
anything ordinary, because only the secret holds that.

The nearest ordinary memory is the vector leg's best hit (the vector leg never returns a
sensitive memory, and searched under the same filters). The secret's vector is read at recall
time by the local embedding model, never stored: sensitive memories are still not indexed by
the vector leg. When the meaning cannot be read (the query embedding, the vector leg or the
secret's embedding did not answer), the secret is withheld: a degraded recall may miss a
secret, never leak one. A deployment with no embedding service keeps the words rule alone.

Pure functions; the gateway's recall (recall.py) does the reads around them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from recallmesh.shared.legs import VECTOR_LEG
from recallmesh.wire.fusion import LegList


def secret_candidates(lists: Sequence[LegList]) -> list[str]:
    """The sensitive candidates the legs returned, each once, in the order first listed."""
    return list(dict.fromkeys(c.memory_id for lst in lists for c in lst.candidates
                              if c.sensitive))


def nearest_ordinary(lists: Sequence[LegList]) -> float | None:
    """The cosine of the ordinary memory nearest the question: the vector leg's best hit.
    None when the vector leg did not answer (its meaning is unknown); -1.0 when it answered
    with nothing (no ordinary memory passes the filters: nothing is nearer than a secret)."""
    vector = next((lst for lst in lists if lst.leg == VECTOR_LEG), None)
    if vector is None:
        return None
    return max((c.score for c in vector.candidates if not c.sensitive), default=-1.0)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def asked_in_meaning(query: Sequence[float], secrets: Mapping[str, Sequence[float]],
                     nearest: float) -> set[str]:
    """The secrets nearer the question than its nearest ordinary memory (`nearest`, a
    cosine): what the question asks for beyond what the ordinary memories say."""
    return {memory_id for memory_id, vector in secrets.items()
            if cosine(query, vector) > nearest}


def withhold(lists: Sequence[LegList], memory_ids: set[str]) -> list[LegList]:
    """`lists` without the candidates in `memory_ids`."""
    if not memory_ids:
        return list(lists)
    return [replace(lst, candidates=[c for c in lst.candidates
                                     if c.memory_id not in memory_ids])
            if any(c.memory_id in memory_ids for c in lst.candidates) else lst
            for lst in lists]
