"""Authors named in brackets after a title (factual_accuracy/attributes.py): a bracket holds an author
claim when its name is an author of the case, or when the answer's other brackets of that layout hold
their products' authors; a title in another form, a price or a stock word is no name."""

from __future__ import annotations

from fmquality.domain.case import TestCase
from fmquality.schemes.mangaassist.factual_accuracy.check import check

CATALOG = [
    {"asin": "B0K3J95528", "title": "Dandadan, Vol. 1", "title_ja": "ダンダダン 1", "author": "龍幸伸", "price": 528,
     "currency": "JPY", "availability": "in_stock"},
    {"asin": "B0K3J50748", "title": "Look Back", "title_ja": "ルックバック", "author": "藤本タツキ", "price": 748,
     "currency": "JPY", "availability": "in_stock"},
    {"asin": "B0K3H11199", "title": "Horimiya, Vol. 1", "author": "HERO, Daisuke Hagiwara", "price": 11.99,
     "currency": "USD", "availability": "in_stock"},
    {"asin": "B0K3S12990", "title": "Skip and Loafer, Vol. 1", "author": "Misaki Takamatsu", "price": 12.99,
     "currency": "USD", "availability": "in_stock"},
]


def _failures(response: str, rubric, locale: str = "ja-JP") -> list[str]:
    case = TestCase.model_validate({"test_id": "t", "intent": "recommendation", "locale": locale,
                                    "query": "おすすめは？" if locale == "ja-JP" else "Any picks?",
                                    "response": response, "catalog": CATALOG})
    return [h.detail for h in check(case, rubric).hard_failures if h.rule == "attribute_contradiction"]


def test_another_products_author_in_the_bracket_is_a_wrong_author(rubric):
    wrong = "・『ダンダダン』1巻（藤本タツキ）528円です。\n・『ルックバック』（藤本タツキ）748円です。"
    assert any("Dandadan" in f for f in _failures(wrong, rubric))


def test_an_unknown_name_in_a_layout_of_authors_is_a_wrong_author(rubric):
    wrong = ("- **Horimiya, Vol. 1** (HERO & Daisuke Hagiwara) — $11.99\n"
             "- **Skip and Loafer, Vol. 1** (尾田栄一郎) — $12.99")
    assert any("Skip and Loafer" in f for f in _failures(wrong, rubric, "en-US"))


def test_right_authors_titles_prices_and_an_unknown_name_alone_say_nothing(rubric):
    right = "・『ダンダダン』1巻（龍幸伸）528円です。\n・『ルックバック』（藤本タツキ）748円です。"
    assert _failures(right, rubric) == []
    other_forms = "- **Look Back** (ルックバック) — $7.48\n- **Dandadan, Vol. 1** (528円・在庫あり)"
    assert _failures(other_forms, rubric, "en-US") == []
    # An unknown name with no layout of authors around it: a publisher, a translator? Silent.
    assert _failures("Here is **Skip and Loafer, Vol. 1** (Seven Seas) for $12.99.", rubric, "en-US") == []


def test_a_name_by_script_across_japanese_and_english(rubric):
    assert _failures("- **Look Back** by 藤本タツキ — $7.48.", rubric, "en-US") == []
    assert _failures("- **Look Back** by 遠藤達哉 — $7.48.", rubric, "en-US")
