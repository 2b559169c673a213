"""The embedded semantic default: BM25 over FTS5, scores in [0, 1], nothing kept."""

from __future__ import annotations

from memkg.semantic import Bm25Index
from memkg.semantic.tokens import index_terms

DOCS = [
    ("a", "medical conditions: asthma ; breathing problems ; wheezing ; inhaler"),
    ("b", "child age: 4 ; Age of the user's child in years"),
    ("c", "Likes morning appointments"),
]


def test_closest_scores_one_and_unrelated_are_left_out() -> None:
    scores = Bm25Index().scores("u1", "my kid's breathing at night", DOCS)
    assert scores == {"a": 1.0}


def test_stemming_and_relative_scores() -> None:
    scores = Bm25Index().scores("u1", "printers and inks", [
        ("p", "printer ink cartridges"), ("q", "printer"), ("r", "flights"),
    ])  # fmt: skip
    assert scores["p"] == 1.0 and 0 < scores["q"] < 1 and "r" not in scores


def test_background_gives_rare_terms_their_weight() -> None:
    """Without it, a term in half of four documents weighs nothing (BM25's idf is 0)."""
    docs = [("hp", "hp laserjet paper jam"), ("canon", "canon inkjet ink"),
            ("interest", "printers ink toner"), ("viewed", "canon printers")]  # fmt: skip
    alone = Bm25Index().scores("u1", "hp laserjet ink", docs)
    index = Bm25Index([f"concept {i}" for i in range(20)])
    background = index.scores("u1", "hp laserjet ink", docs)
    assert alone["hp"] == 1.0 and alone["canon"] < 1e-3
    assert background["hp"] == 1.0 and background["canon"] > 0.1


def test_nothing_of_a_query_stays_in_the_index() -> None:
    index = Bm25Index(["asthma ; wheezing"])
    index.scores("u1", "asthma", [("x", "asthma secret-marker")])
    assert index.scores("u2", "secret marker", [("y", "unrelated")]) == {}
    rows = index._db.execute("SELECT count(*) FROM docs").fetchone()
    assert rows == (1,)
    index.close()


def test_terms_drop_stop_words_and_single_letters_and_split_chinese() -> None:
    assert index_terms("The thing I said about my kid's breathing") == ["kid", "breathing"]
    assert index_terms("孩子哮喘") == ["孩子", "子哮", "哮喘"]
