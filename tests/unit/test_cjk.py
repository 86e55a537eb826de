"""CJK character pairs for the lexical leg (recallmesh/shared/cjk.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from recallmesh.shared.cjk import index_terms, query_terms

HAN = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
KANA = st.characters(min_codepoint=0x3041, max_codepoint=0x30FA)
CJK = st.text(st.one_of(HAN, KANA), min_size=1, max_size=30)


@given(CJK, st.data())
def test_every_word_inside_a_run_is_found(text: str, data: st.DataObject) -> None:
    """Any piece of a stored run, searched alone, is all indexed terms: the AND tier."""
    start = data.draw(st.integers(0, len(text) - 1))
    piece = text[start:data.draw(st.integers(start + 1, len(text)))]
    assert set(query_terms(piece).split()) <= set(index_terms(f"x {text} y").split())


def test_latin_text_is_left_to_the_parser() -> None:
    assert index_terms("The passport is in the study") == ""
    assert query_terms("where is my passport?") == "where is my passport?"


def test_runs_become_pairs_and_single_characters() -> None:
    assert index_terms("护照在") == "护 照 在 护照 照在"
    assert query_terms("护照在哪里") == " 护照 照在 在哪 哪里 "
    assert query_terms("书") == " 书 "
    assert query_terms("Passwort 金庫") == "Passwort  金庫 "
