"""The pool levers (benchmarks/replay/pool_levers.py): how a memory's extra texts are cut, and
that a variant scores a memory by the best of its vectors, with the served model."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.harness.data import load
from benchmarks.replay import pool_levers
from benchmarks.replay.pool_levers import StoredVectors, further_windows, sentence_split


def test_sentences_are_split_at_end_marks_and_a_single_sentence_gives_none():
    text = ("I'm looking for paint brushes. By the way, I just attended my college graduation! "
            "Any tips?")
    assert sentence_split(text) == ["I'm looking for paint brushes.",
                                    "By the way, I just attended my college graduation!"]
    assert sentence_split("One sentence only, with e.g. an abbreviation.") == []


def test_windows_follow_the_first_one_and_overlap(tmp_path):
    vectors = StoredVectors(tmp_path)
    tokenizer = vectors.tokenizer
    text = " ".join(f"word{i}" for i in range(400))
    n = len(tokenizer.encode(text, add_special_tokens=False).ids)
    windows = further_windows(text, tokenizer, width=200, overlap=20)
    assert n > 200 and windows
    first = tokenizer.encode(windows[0], add_special_tokens=False).ids
    assert len(first) <= 200 + 2  # a word cut at a window edge can re-tokenise a little longer
    assert windows[-1].endswith("word399")
    assert further_windows("short text", tokenizer, width=200) == []


def test_a_variant_scores_a_memory_by_its_best_sentence(tmp_path):
    """A long turn about something else, with the fact said in passing: its sentence vector
    brings it above a memory that is only loosely about the question."""
    data = tmp_path / "split"
    data.mkdir()
    corpus = [
        {"id": "turn", "text": "I need advice on cleaning antique furniture and restoring "
                               "old varnish without damaging the wood. By the way, my sister "
                               "gave me a silver necklace last Saturday. What oil works best?"},
        {"id": "loose", "text": "Jewellery shops in the old town open late on Fridays."},
        {"id": "other", "text": "The train to the coast leaves at nine."}]
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    (data / "queries.jsonl").write_text(json.dumps(
        {"query_id": "q", "text": "Who gave me a piece of jewelry last Saturday?"}))
    (data / "qrels.jsonl").write_text(json.dumps({"query_id": "q", "relevant_ids": ["turn"]}))
    ds = load(data)
    pool = {"dataset": "split", "queries": [{"query_id": "q", "legs": {"vector": []}}]}
    vectors = StoredVectors(tmp_path / "store")
    assert not vectors.holds(ds)  # the cross-validation skips a split the store lacks
    whole = pool_levers.variant(pool, ds, "whole", vectors)
    assert vectors.holds(ds)
    by_sentence = pool_levers.variant(pool, ds, "sentences", vectors)
    score = {lever: {i: s for i, _, s in p["queries"][0]["legs"]["vector"]}
             for lever, p in (("whole", whole), ("sentences", by_sentence))}
    assert set(score["whole"]) == {"turn", "loose", "other"}
    assert score["sentences"]["turn"] > score["whole"]["turn"]  # its best sentence
    assert score["sentences"]["loose"] == score["whole"]["loose"]  # one sentence: unchanged
    assert [i for i, _, _ in by_sentence["queries"][0]["legs"]["vector"]][0] == "turn"
    # what was embedded is in the store now: a second variant embeds nothing
    again = StoredVectors(tmp_path / "store")
    np.testing.assert_allclose(
        again.get("document", [corpus[1]["text"]])[0],
        vectors.get("document", [corpus[1]["text"]])[0])
    assert again._embedder is None
