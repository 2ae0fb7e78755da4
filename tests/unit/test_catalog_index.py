"""The catalog index: where a text names catalog products, and which products a case concerns."""

from __future__ import annotations

from fmquality.language.catalog_index import CatalogIndex, products_in_play
from fmquality.domain.case import CatalogItem, TestCase
from fmquality.language.text import normalize

ITEMS = [
    CatalogItem(asin="US1", title="Monster", price=19.99, currency="USD", title_ja="MONSTER"),
    CatalogItem(asin="US2", title="Demon Slayer: Kimetsu no Yaiba, Vol. 1", price=9.99, currency="USD",
                title_ja="鬼滅の刃 1", title_romaji="Kimetsu no Yaiba"),
    CatalogItem(asin="JP2", title="Demon Slayer: Kimetsu no Yaiba, Vol. 1", price=484, currency="JPY",
                title_ja="鬼滅の刃 1"),
    CatalogItem(asin="NN1", title="Nana", price=9.99, currency="USD", title_ja="ナナ"),
    CatalogItem(asin="SF1", title="Spy x Family", price=9.99, currency="USD"),
]


def names(index: CatalogIndex, text: str, currency: str | None = None) -> list[str]:
    return index.named(text, currency)


def test_latin_titles_match_whole_words_and_a_one_word_title_only_when_capitalised():
    index = CatalogIndex(ITEMS)
    assert names(index, "Tanjiro fights monsters.") == []
    assert names(index, "a monster of a book") == []
    assert names(index, "Read Monster next.") == ["US1"]
    assert names(index, "spy x family!! is fun") == ["SF1"]  # punctuation between words is ignored


def test_series_names_and_editions():
    index = CatalogIndex(ITEMS)
    assert set(names(index, "Demon Slayer is great")) == {"US2", "JP2"}  # the series, both editions
    assert names(index, "鬼滅の刃は484円です。", "JPY") == ["JP2"]  # the edition sold in the text's currency
    assert names(index, "I read Kimetsu no Yaiba") == ["US2"]


def test_a_katakana_name_inside_a_longer_katakana_word_is_another_word():
    index = CatalogIndex(ITEMS)
    assert names(index, "バナナが好き") == []
    assert names(index, "ナナがおすすめです") == ["NN1"]


def test_mentions_are_positions_in_the_normalized_text():
    text = "Try ＭＯＮＳＴＥＲ, or Kuroko's… no: Spy-x-Family"
    spans = [(m.start, m.end, m.asins) for m in CatalogIndex(ITEMS).mentions(text)]
    norm = normalize(text)
    assert [(norm[s:e], asins) for s, e, asins in spans] == [("monster", ("US1",)), ("spy-x-family", ("SF1",))]


def test_products_in_play_come_from_the_case_texts_the_page_and_the_expected_products():
    case = TestCase(test_id="t", intent="product_question", query="Is Monster scary?",
                    response="It is! If you like it, try Spy x Family next.",
                    page_context={"current_asin": "NN1"}, expected_products=["US2"], catalog=ITEMS)
    assert products_in_play(case) == ["US1", "SF1", "NN1", "US2"]
    big = CatalogIndex(ITEMS + [CatalogItem(asin=f"X{i}", title=f"Filler Title {i}", price=1) for i in range(500)])
    assert products_in_play(case, big) == ["US1", "SF1", "NN1", "US2"]
