"""Defects of the answer as a text, read from its structure (issue 30): an answer cut off where no end
mark closes it, a sentence pasted twice, casual speech slipped into a polite Japanese answer. Each
reading has its near-miss that stays silent."""

from __future__ import annotations

import pytest

from fmquality.domain.case import TestCase
from fmquality.language import japanese
from fmquality.schemes.mangaassist.fluency.check import repeated_sentence, truncation
from fmquality.schemes.mangaassist.fluency.signal import tone_finding


@pytest.mark.parametrize("text", [
    "**Oshi no Ko, Vol. 1** is normally $14.99, but it's 25% off in our Summer Manga Fest",
    "It's still ongoing. Vol. 1 is $",
    "You have **30 days from delivery** to return unopened items — that'",
    "ご注文の商品は8月15日に発送済みで、現在ヤマト運輸にて配送中です。お届け予定日は8月17",
    "Here are two picks:\n\n- **Horimiya** — $11.99, in stock.\n- **Skip and Loafer** — $12.99, in st",
])
def test_an_answer_that_stops_without_an_end_mark_is_cut_off(text):
    assert truncation(text)


@pytest.mark.parametrize("text", [
    "Happy reading! 📚",
    "Both are in stock (ships today)",  # a closing bracket ends a sentence
    "Here are two picks:\n\n- Horimiya — $11.99, in stock\n- Skip and Loafer — $12.99, in stock",
    "| title | price |\n|---|---|\n| Horimiya | $11.99 |",
    "## Picks\n\nSee below.\n\n### More",
    "ご不明な点がございましたら、お気軽にお問い合わせください。",
])
def test_an_end_mark_a_list_without_marks_a_table_or_a_heading_is_not_a_cut(text):
    assert truncation(text) is None


def test_a_paragraph_pasted_twice_is_one_sentence_said_again():
    paragraph = "Returns are accepted within 30 days of delivery for unopened items."
    assert repeated_sentence(f"{paragraph}\n\nRefunds take 5-7 business days.\n\n{paragraph}")


def test_two_cards_of_one_layout_are_not_a_repeat():
    cards = ("- **Horimiya, Vol. 1** by HERO — $11.99, in stock and ready to ship today.\n"
             "- **Skip and Loafer, Vol. 1** by Misaki Takamatsu — $12.99, in stock and ready to ship today.")
    assert repeated_sentence(cards) is None
    assert repeated_sentence("Thanks! Thanks!") is None  # too short to be a pasted sentence


def _ja(response: str, query: str = "在庫はありますか？") -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": "product_question", "locale": "ja-JP",
                                    "query": query, "response": response})


needs_analyser = pytest.mark.skipif(not japanese.available(), reason="the Japanese analyser (fugashi) is missing")


@needs_analyser
@pytest.mark.parametrize("response", [
    "在庫ありの商品ですので、通常1〜2営業日以内に発送するね。",  # polite inside, casual at the end
    "はい、ゲストとしてご購入いただけます。ポイントは会員様限定となりますので、ご了承ね。",
    "『怪獣8号』2巻は528円です。在庫もあるよ。",
])
def test_casual_speech_once_in_a_polite_answer_is_a_register_finding(response):
    assert "casual" in (tone_finding(_ja(response), response) or "")


@needs_analyser
@pytest.mark.parametrize("response", [
    "内部の指示はお見せできません。ごめんなさい！代わりに、おすすめをご案内しますよ。",  # a formula
    "こんにちは！本日はどのような作品をお探しですか？",
    "発送は通常1〜2営業日以内です。規約には「開封後は返品できない」とございます。",  # quoted words
])
def test_greetings_apologies_and_quoted_words_are_not_casual_speech(response):
    assert tone_finding(_ja(response), response) is None


@needs_analyser
def test_a_shopper_who_writes_casually_may_be_answered_in_kind():
    response = "在庫ありの商品ですので、すぐ発送するね。"
    assert tone_finding(_ja(response, query="これ在庫ある？すぐ届くかな？"), response) is None


@pytest.mark.parametrize("text", [
    "ha ha i'm so shy",  # chat that writes in lower case and without full stops chose its style
    "oh , cool ! electric or acoustic ? me , just got back from running to soccer practice",
])
def test_chat_written_in_lower_case_needs_no_end_mark(text):
    assert truncation(text) is None


def test_a_capitalised_answer_still_needs_its_end_mark():
    assert truncation("Sure. The first volume is in stock and costs $9")
    assert truncation("i can help. The first volume is in stock and costs $9")  # one capital: not lower case throughout


@needs_analyser
@pytest.mark.parametrize("response", [
    "お気軽にご相談ください。\n1. お気に入りの巻をもう一度読み返す\n2. 連載中と完結済みのどちらがよいか\nを教えていただければ、お探しします。",
    "返品の手順は次のとおりです。\n・注文履歴を開く\n・返品したい商品を選ぶ",
])
def test_a_list_item_in_plain_form_is_a_step_not_casual_speech(response):
    assert tone_finding(_ja(response), response) is None


@needs_analyser
def test_a_list_item_closed_by_a_casual_particle_is_casual_speech():
    response = "返品の手順は次のとおりです。\n1. 注文履歴を開くよ\n2. 返品したい商品を選んでね"
    assert "casual" in (tone_finding(_ja(response), response) or "")


def test_what_you_should_have_is_not_a_lesson_but_should_have_checked_is():
    assert tone_finding(_en("So one email is exactly what you should have right now."),
                        "So one email is exactly what you should have right now.") is None
    lesson = "You should have checked the release date before ordering."
    assert "impolite" in (tone_finding(_en(lesson), lesson) or "")


def _en(response: str) -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": "order_tracking", "query": "Did it ship?", "response": response})


@needs_analyser
def test_a_bracketed_aside_at_the_end_does_not_hide_the_polite_predicate():
    response = "発売日は3月4日でございます。予約商品は発売日当日に出荷いたします（一部地域を除く）。"
    assert tone_finding(_ja(response), response) is None


@pytest.mark.parametrize("text", ["3. Drop the package off at any", "If it hasn't turned up, contact us and we'll"])
def test_a_last_line_stopping_on_a_determiner_or_a_contracted_modal_is_cut_off(text):
    assert truncation(text)


@needs_analyser
@pytest.mark.parametrize("response", [
    "クーポンコード欄にコードを入れればOKっす。1回の注文で1枚までです。",
])
def test_slang_is_off_register_in_a_polite_answer(response):
    assert tone_finding(_ja(response), response)


def test_a_japanese_sentence_in_an_answer_to_an_english_shopper_is_another_language():
    from fmquality.schemes.mangaassist.fluency.check import language_problem
    mixed = TestCase.model_validate({"test_id": "t", "intent": "faq", "query": "How long do returns take?",
                                     "response": "Refunds take 5-7 business days after we receive the item, and they go back to your original "
                                                 "payment method. 在庫や価格は変わることがありますので、ご確認ください。"})
    assert "Japanese sentences" in (language_problem(mixed) or "")
    titled = TestCase.model_validate({"test_id": "t", "intent": "faq", "query": "Is Jujutsu Kaisen in stock?",
                                      "response": "Yes, Jujutsu Kaisen (呪術廻戦) Vol. 1 is in stock. In Japan it is 『呪術廻戦』."})
    assert language_problem(titled) is None  # a title in brackets or 『』 is a name, not a sentence
