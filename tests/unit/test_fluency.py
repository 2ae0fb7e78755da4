"""Fluency: formatting checks (length, product cards, Japanese titles: incident 4) and the offline
judge's reading of grammar and tone."""

from __future__ import annotations

import pytest

from fmquality.schemes.mangaassist.fluency import check as fluency
from fmquality.run.evaluate import score_one_dimension
from fmquality.judges.offline import OfflineJudge, offline_verdict
from fmquality.domain.case import TestCase

from tests.unit.shonen_catalog import CATALOG

NATURAL_JA = (
    "鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）は、家族を鬼に殺された少年・炭治郎が妹を救うために戦う物語です。"
    "迫力ある剣戟と家族の絆が魅力で、初めての方にもおすすめです。第1巻は1,100円で、現在は在庫切れですが、"
    "入荷のお知らせを受け取ることができます。"
)
# Incident 4's defective answer: no romanization, and it reads like a literal machine translation.
MECHANICAL_JA = (
    "鬼滅の刃は、あなたのための素晴らしいの物語の少年の話です。この本は剣の戦いのファンのための本です。"
    "あなたはそれを楽しむだろう。第1巻の価格は1,100円です在庫切れ"
)


def make_case(response: str, intent: str = "product_question", **fields) -> TestCase:
    data = {"test_id": "t1", "intent": intent, "query": "Tell me about it", "response": response, "catalog": CATALOG}
    data.update(fields)
    return TestCase.model_validate(data)


# --- formatting: Japanese titles (incident 4) ----------------------------------------------------


def test_incident4_convention_applies_to_english_answers_only(rubric):
    """The title convention (original, romaji, English) is for English answers that mention Japanese
    titles; a Japanese answer to a Japanese shopper writes the title alone, as natural Japanese does."""
    english = make_case("鬼滅の刃 is a thrilling story about a boy who fights demons to save his sister.",
                        query="Tell me about Demon Slayer")
    formatting = fluency.check(english, rubric).sub_scores["formatting"]
    assert formatting.score <= 0.3
    assert any("鬼滅の刃" in e and "romanization" in e for e in formatting.evidence)
    japanese = make_case("『鬼滅の刃』は、家族を鬼に殺された少年・炭治郎が妹を救うために戦う物語です。第1巻は1,100円です。",
                         locale="ja-JP", query="鬼滅の刃について教えて")
    assert fluency.check(japanese, rubric).sub_scores["formatting"].score == 1.0


def test_a_missing_romanization_is_a_style_lapse_not_a_failure(rubric):
    case = make_case("鬼滅の刃 is a thrilling story about a boy who fights demons to save his sister.",
                     query="Tell me about Demon Slayer")
    report = fluency.check(case, rubric)
    assert report.sub_scores["formatting"].score < 1.0 and not report.hard_failures


def test_japanese_title_with_romaji_and_english_passes(rubric):
    case = make_case(NATURAL_JA, locale="ja-JP", query="鬼滅の刃について教えて")
    assert fluency.check(case, rubric).sub_scores["formatting"].score == 1.0


def test_romanization_compared_loosely_and_by_fallback_when_catalog_lacks_romaji(rubric):
    catalog = [{"asin": "B0XX", "title": "Attack on Titan, Vol. 1", "price": 10.99, "title_ja": "進撃の巨人"}]
    with_romaji = make_case("進撃の巨人 (Shingeki no Kyojin, Attack on Titan) is a dark fantasy epic about humanity's last city.",
                            catalog=catalog)
    without = make_case("進撃の巨人 (Attack on Titan) is a dark fantasy epic about humanity's last city walls.",
                        catalog=catalog)
    assert fluency.check(with_romaji, rubric).sub_scores["formatting"].score == 1.0
    assert fluency.check(without, rubric).sub_scores["formatting"].score <= 0.3


def test_japanese_title_without_english_is_penalised_less_than_missing_romaji(rubric):
    no_english = make_case("鬼滅の刃 (Kimetsu no Yaiba) follows Tanjiro, who fights demons. Vol. 1 is out of stock.")
    no_romaji = make_case("鬼滅の刃 (Demon Slayer) follows Tanjiro, who fights demons. Vol. 1 is out of stock.")
    english_missing = fluency.check(no_english, rubric).sub_scores["formatting"].score
    romaji_missing = fluency.check(no_romaji, rubric).sub_scores["formatting"].score
    assert romaji_missing < english_missing < 1.0


# --- formatting: length and product cards --------------------------------------------------------


def test_length_within_range_is_full_and_outside_is_penalised_in_proportion(rubric):
    rule = rubric.length_rule("faq")
    sentence = "Returns are accepted within thirty days."  # six words

    def formatting_for(response: str) -> float:
        return fluency.check(make_case(response, intent="faq", catalog=[]), rubric).sub_scores["formatting"].score

    assert formatting_for("Returns are accepted within 30 days of delivery for unread manga.") == 1.0
    assert formatting_for("30 days.") < 1.0
    slightly_over = formatting_for(" ".join([sentence] * (rule.max_words // 6 + 2)))
    far_over = formatting_for(" ".join([sentence] * (rule.max_words // 3)))
    assert 0.6 < slightly_over < 1.0
    assert far_over < 0.2
    assert fluency.check(make_case("30 days.", intent="faq", catalog=[]), rubric).sub_scores["formatting"].evidence[0].startswith("length")


def test_japanese_length_counts_characters_not_spaces(rubric):
    # Sixty kana without a single space are about 30 words: inside the faq range, not one "word".
    case = make_case("返品は商品到着後三十日以内に受け付けております。未読の状態でお送りください。" * 2, intent="faq", catalog=[])
    assert fluency.check(case, rubric).sub_scores["formatting"].score == 1.0


CARDS = (
    "Here are some great shonen picks you'll love!\n"
    "1. One Piece, Vol. 1 — $9.99, in stock\n"
    "2. Jujutsu Kaisen, Vol. 1 — $9.99, in stock\n"
    "3. Demon Slayer: Kimetsu no Yaiba, Vol. 1 — $9.99, out of stock"
)
PROSE = ("You might like One Piece, Vol. 1 and Jujutsu Kaisen, Vol. 1, two great shonen series full of action "
         "and heart that are perfect for new readers.")


def test_product_cards_with_title_price_availability_score_full(rubric):
    formatting = fluency.check(make_case(CARDS, intent="recommendation"), rubric).sub_scores["formatting"]
    assert formatting.score == 1.0


def test_products_in_prose_without_cards_score_lower_with_evidence(rubric):
    formatting = fluency.check(make_case(PROSE, intent="recommendation"), rubric).sub_scores["formatting"]
    assert formatting.score < 0.8
    assert any("lacks" in e and "price" in e for e in formatting.evidence)


def test_multi_line_cards_count(rubric):
    body = ("Two picks you'll love:\n- One Piece, Vol. 1\n  - $9.99\n  - In stock\n"
            "- Jujutsu Kaisen, Vol. 1\n  - $9.99\n  - In stock")
    assert fluency.check(make_case(body, intent="recommendation"), rubric).sub_scores["formatting"].score == 1.0


def test_product_cards_do_not_apply_outside_recommendations(rubric):
    # A faq answer naming two products is judged on length only: the card rule is left out, not failed.
    case = make_case(PROSE, intent="faq")
    assert fluency.check(case, rubric).sub_scores["formatting"].score == 1.0


def test_formatting_skipped_when_nothing_applies(rubric):
    bare = rubric.model_copy(deep=True)
    bare.style.length.clear()
    report = fluency.check(make_case("Thanks, happy reading!", intent="chitchat", catalog=[]), bare)
    assert "formatting" in report.not_applicable
    assert set(report.needs_judge) == {"grammar", "tone"}


# --- grammar and tone via the offline judge ------------------------------------------------------


def test_incident4_mechanical_japanese_grammar_scores_clearly_lower_than_natural(rubric):
    natural = offline_verdict(make_case(NATURAL_JA, locale="ja-JP"), rubric, ["grammar"])
    mechanical = offline_verdict(make_case(MECHANICAL_JA, locale="ja-JP"), rubric, ["grammar"])
    assert natural.sub_scores["grammar"] >= 0.85
    assert mechanical.sub_scores["grammar"] <= natural.sub_scores["grammar"] - 0.3
    assert mechanical.evidence


@pytest.mark.parametrize(
    "defective",
    ["the series is great. the art is great too.  It is is a must read.",
     "One Piece is great,, and and fun.",
     "This manga " + "is really long and it keeps going and going " * 6 + "without a stop."],
)
def test_mechanical_english_scores_lower_than_clean_english(rubric, defective):
    clean = "One Piece follows Luffy and his crew on a grand pirate adventure. The first volume is a great start."
    clean_score = offline_verdict(make_case(clean), rubric, ["grammar"]).sub_scores["grammar"]
    bad_score = offline_verdict(make_case(defective), rubric, ["grammar"]).sub_scores["grammar"]
    assert bad_score < clean_score


def test_tone_empathetic_for_returns(rubric):
    warm = make_case("I'm sorry the book arrived damaged. You can return it within 30 days for a full refund.",
                     intent="return_request")
    cold = make_case("Returns are accepted within 30 days. Obviously, just read the FAQ next time.",
                     intent="return_request")
    # Markers of a good register earned no agreement with people: without a defect the judge abstains.
    assert "tone" in offline_verdict(warm, rubric, ["tone"]).abstained
    cold_verdict = offline_verdict(cold, rubric, ["tone"])
    assert cold_verdict.sub_scores["tone"] == 0.0 and "tone" not in cold_verdict.weights  # a finding


def test_tone_english_answer_to_japanese_shopper_is_lowered(rubric):
    japanese = make_case("ワンピース（Wan Pīsu / One Piece）第1巻は990円で、在庫がございます。ぜひお楽しみください！",
                         intent="recommendation", locale="ja-JP", query="おすすめの漫画はありますか？")
    english = make_case("One Piece Vol. 1 is a great pick, $9.99 and in stock!", intent="recommendation",
                        locale="ja-JP", query="おすすめの漫画はありますか？")
    assert "tone" in offline_verdict(japanese, rubric, ["tone"]).abstained
    assert offline_verdict(english, rubric, ["tone"]).sub_scores["tone"] == 0.0


def test_tone_plain_form_japanese_is_lowered(rubric):
    polite = make_case("返品は到着後30日以内に受け付けています。", intent="faq", locale="ja-JP", query="返品期限は？")
    plain = make_case("返品は到着後30日以内に受け付けている。", intent="faq", locale="ja-JP", query="返品期限は？")
    # One plain sentence is a shortfall the composite weighs; most of them would be a finding.
    assert offline_verdict(plain, rubric, ["tone"]).sub_scores["tone"] < 1.0
    assert "tone" in offline_verdict(polite, rubric, ["tone"]).abstained


def test_tone_precise_needs_concrete_facts(rubric):
    concrete = make_case("Your order shipped on May 3 and should arrive within 2 days.", intent="order_tracking")
    vague = make_case("Your order is on its way and will be there super soon, amazing!", intent="order_tracking")
    assert offline_verdict(vague, rubric, ["tone"]).sub_scores["tone"] < 1.0
    assert "tone" in offline_verdict(concrete, rubric, ["tone"]).abstained


def test_offline_verdict_answers_only_asked_sub_scores(rubric):
    verdict = offline_verdict(make_case("Hello there, happy reading!"), rubric, ["tone"])
    assert set(verdict.sub_scores) | set(verdict.abstained) == {"tone"}
    assert verdict.rationale


# --- end to end ----------------------------------------------------------------------------------


def test_end_to_end_incident4_through_score_one_dimension(rubric):
    natural = score_one_dimension("fluency", make_case(NATURAL_JA, locale="ja-JP", query="鬼滅の刃について教えて"),
                                  rubric, OfflineJudge())
    defective = score_one_dimension("fluency", make_case(MECHANICAL_JA, locale="ja-JP", query="鬼滅の刃について教えて"),
                                    rubric, OfflineJudge())
    assert natural.status == defective.status == "scored"
    assert {"grammar", "formatting"} <= set(natural.sub_scores)
    # Both are Japanese answers: the title convention does not apply; the mechanical one reads worse.
    assert natural.sub_scores["formatting"] == defective.sub_scores["formatting"] == 1.0
    assert defective.sub_scores["grammar"] < natural.sub_scores["grammar"] - 0.3
    assert natural.score >= 0.9
    # The offline judge has no measure of its own certainty, so the judged part is of unknown confidence.
    assert defective.confidence is None


@pytest.mark.parametrize(
    ("telegraphic", "natural"),
    [("葬送のフリーレン。予約：可能。価格：594円。請求：発送時。以上です。",
      "葬送のフリーレンの新刊は現在予約受付中です。価格は594円で、代金は発送時に請求されます。")],
)
def test_telegraphic_answers_read_mechanically(rubric, telegraphic, natural):
    bad = offline_verdict(make_case(telegraphic), rubric, ["grammar"]).sub_scores["grammar"]
    good = offline_verdict(make_case(natural), rubric, ["grammar"]).sub_scores["grammar"]
    assert bad <= good - 0.3


def test_tone_a_reported_problem_needs_an_apology(rubric):
    query = "My copy arrived with a torn cover."
    cold = make_case("Report it within 15 days of delivery and we'll send a replacement.", intent="return_request", query=query)
    warm = make_case("I'm so sorry about the torn cover! Report it within 15 days and we'll send a replacement.",
                     intent="return_request", query=query)
    assert offline_verdict(cold, rubric, ["tone"]).sub_scores["tone"] < 1.0
    assert "tone" in offline_verdict(warm, rubric, ["tone"]).abstained


# --- grammar: repetition and casing, read the same on chat nobody here wrote (issue 30) -----------


def test_words_said_again_lower_grammar_and_a_chosen_lower_case_style_does_not():
    from fmquality.schemes.mangaassist.fluency.signal import grammar

    repeated = grammar(make_case("i live in a rural area so i live in a rural area .", intent="chitchat"))
    plain = grammar(make_case("i live in a rural area , close to the river .", intent="chitchat"))
    assert repeated.score < plain.score
    assert not any("lower case" in e for e in plain.evidence)  # lower case throughout is the text's style
    mixed = grammar(make_case("I live near the river. we like it there.", intent="chitchat"))
    assert any("lower case" in e for e in mixed.evidence)


def test_sentences_opening_alike_in_a_row_read_as_repetitive():
    from fmquality.schemes.mangaassist.fluency.signal import grammar

    alike = grammar(make_case("i am a college student . i am in high school .", intent="chitchat"))
    varied = grammar(make_case("i am a college student . my classes start in june .", intent="chitchat"))
    assert alike.score < varied.score
