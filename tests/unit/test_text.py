"""The language layer: Japanese and mixed tokenization, prices, quantities, ordinals, sentences, lists, stock phrases."""

from __future__ import annotations

import pytest

from fmquality.language import numbers, stock, text
from fmquality.language.vocabulary import concept_tokens


def test_japanese_is_segmented_into_words_not_split_on_spaces():
    tokens = text.tokenize("呪術廻戦はとても人気のある漫画です")
    assert "人気" in tokens
    assert "漫画" in tokens
    # A whole sentence without spaces still yields several tokens.
    assert len(tokens) >= 6


def test_mixed_text_keeps_english_words_and_japanese_words_in_order():
    tokens = text.tokenize("ONE PIECEの第1巻はおすすめです")
    assert tokens[:2] == ["one", "piece"]
    assert "おすすめ" in tokens
    assert tokens.index("piece") < tokens.index("おすすめ")


def test_concept_tokens_drop_stopwords_and_map_the_store_vocabulary_in_both_languages():
    tokens = concept_tokens(text.normalize("The manga is in stock; you can send it back. この漫画は在庫があります"))
    assert "the" not in tokens and "は" not in tokens
    assert {"manga", "漫画", "stock", "return"} <= tokens  # "send it back" and "return" are one word here


@pytest.mark.parametrize(
    ("raw", "amount", "currency"),
    [("only $12.99 today", 12.99, "USD"), ("価格は1,200円です", 1200, "JPY"), ("¥980", 980, "JPY"),
     ("12.50 USD", 12.5, "USD"), ("１，５００円", 1500, "JPY")],
)
def test_extract_prices(raw, amount, currency):
    prices = numbers.extract_prices(raw)
    assert len(prices) == 1
    assert prices[0].amount == pytest.approx(amount)
    assert prices[0].currency == currency


def test_quantities_read_units_in_english_and_japanese_and_skip_ids():
    quantities = numbers.extract_quantities("Return within 30 days or 15日以内, 10% off. Order B0ABC123.")
    pairs = {(q.value, q.unit) for q in quantities}
    assert (30, "day") in pairs
    assert (15, "day") in pairs
    assert (10, "percent") in pairs
    assert not any(q.value == 123 for q in quantities)


@pytest.mark.parametrize(
    ("query", "ordinal"),
    [("tell me about the second one", 2), ("What about the first one?", 1), ("the last one please", -1),
     ("2つ目について教えて", 2), ("二つ目の作品は？", 2), ("3番目はどう？", 3), ("最後のやつは？", -1),
     ("do you have one piece?", None)],
)
def test_find_ordinal(query, ordinal):
    assert numbers.find_ordinal(query) == ordinal


def test_split_sentences_keeps_prices_and_volume_abbreviations_whole():
    parts = text.split_sentences("It costs $12.99 now. Vol. 2 is great!次の巻は予約受付中です。在庫あり\n1. One Piece")
    assert parts == ["It costs $12.99 now.", "Vol. 2 is great!", "次の巻は予約受付中です。", "在庫あり", "1. One Piece"]


def test_list_items_reads_bullets_and_numbers_but_not_decimals():
    body = "Picks:\n1. One Piece\n2) Naruto\n- Bleach\n・呪術廻戦\n3.5 stars overall"
    assert text.list_items(body) == ["One Piece", "Naruto", "Bleach", "呪術廻戦"]
    assert not text.is_list_line("3.5 stars overall")


def test_romaji_key_folds_macrons_and_long_vowels():
    assert text.romaji_key("Shōnen") == text.romaji_key("Shounen") == text.romaji_key("shonen")
    assert text.romaji_key("Kimetsu no Yaiba") != text.romaji_key("Kimetsu")


def test_word_count_counts_japanese_characters_two_per_word():
    assert text.word_count("これは本です") == 3
    assert text.word_count("This is a book") == 4


def test_availability_reads_negated_in_stock_as_out_of_stock():
    statuses = [s for s, _ in stock.availability_mentions("It is not in stock. Vol. 2 is 在庫あり")]
    assert statuses == ["out_of_stock", "in_stock"]


def test_japanese_stock_phrases_with_each_particle_and_their_negation():
    statuses = [s for s, _ in stock.availability_mentions("第11巻は在庫もございます。第10巻は在庫はございません。")]
    assert statuses == ["in_stock", "out_of_stock"]


def test_a_prompt_to_buy_says_the_product_can_be_bought_unless_negated_or_left_open():
    def prompts(text: str) -> list[str]:
        return [s for s, _ in stock.purchase_prompts(text)]
    assert prompts("Just add Vol. 2 to your cart and it ships together.") == ["buyable"]
    assert prompts("「カートに入れる」ボタンから、そのままご購入いただけます。") == ["buyable"]
    assert prompts("Sold-out items can't be added to the cart.") == []
    assert prompts("在庫切れの商品はカートに入れられません。") == []
    assert prompts("The product page will show whether you can add it to your cart.") == []


def test_non_before_a_word_negates_it():
    from fmquality.language.alignment import match_fact, read_units
    answer = read_units("Digital purchases are non-refundable once downloaded, so it isn't eligible.")
    assert match_fact("digital not refundable", answer).status != "contradicted"
    assert match_fact("digital not refundable", read_units("Digital purchases are refundable.")).status == "contradicted"


def test_a_fact_said_with_its_polarity_in_a_neighbouring_sentence_is_conveyed():
    from fmquality.language.alignment import match_fact, read_units
    fact = "開封済みはお客様都合で返品不可"
    answer = read_units("お客様都合による返品は「未開封・お届けから14日以内」の商品に限らせていただいております。"
                        "開封済みの商品は、お客様都合での返品をお受けすることができません。")
    assert match_fact(fact, answer).status == "covered"
    granted = read_units("開封済みの商品も、お客様都合での返品をお受けいたします。")
    assert match_fact(fact, granted).status == "contradicted"


def test_japanese_share_and_detection():
    assert text.japanese_share("Hello there") == 0.0
    assert text.japanese_share("こんにちは") == 1.0
    assert text.has_japanese("Try 呪術廻戦")
