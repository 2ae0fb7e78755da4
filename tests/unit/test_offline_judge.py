"""The offline judge's general signals: grounding, Japanese register, grammar, and what it does when
it has no evidence. Each sub-score it answers must move with the evidence, never sit at a constant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.scoring.plan import plan_case
from fmquality.judges.offline import offline_verdict
from fmquality.schemes.mangaassist import DIMENSIONS, MANGAASSIST
from fmquality.language import japanese
from fmquality.schemes.mangaassist.fluency.signal import english_errors, truncated
from fmquality.schemes.mangaassist.factual_accuracy.signal import grounding
from fmquality.domain.case import TestCase

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = ("The city council voted on Tuesday to build a new library on Main Street. The library will cost "
           "$12 million and open in 2027. Mayor Ruth Lee said the project would create 80 jobs.")


def summary(text: str) -> TestCase:
    return TestCase(test_id="s", intent="faq", query="Summarize the article.", response=text, retrieved_chunks=[ARTICLE])


def test_grounding_ranks_a_faithful_summary_above_a_recombined_one_above_an_invented_one():
    scores = [grounding(summary(text), text).score for text in (
        "The city council voted to build a new library on Main Street. The library will cost $12 million.",
        "Mayor Ruth Lee voted to build a new street. The library will create Main jobs.",
        "The library will cost $40 million and open in 2031.",
    )]
    assert scores[0] > scores[1] > scores[2] and scores[2] < 0.6


def test_grounding_abstains_when_the_answer_asserts_nothing_the_evidence_speaks_to(rubric):
    case = TestCase(test_id="c", intent="chitchat", query="Hi!", response="Hi there! Happy reading!")
    verdict = offline_verdict(case, rubric, ["no_hallucination"])
    assert verdict.sub_scores == {} and "asserts nothing" in verdict.abstained["no_hallucination"]


@pytest.mark.parametrize(("sentence", "expected"), [
    ("在庫がございます。", "polite"),
    ("ぜひお楽しみください！", "polite"),
    ("残りわずかだよ。", "plain"),
    ("在庫あるよ。", "plain"),
    ("返品は可能である。", "plain"),
])
def test_politeness_is_read_from_the_predicate(sentence, expected):
    reg = japanese.register(sentence)
    assert (reg.polite and expected == "polite") or (reg.plain and expected == "plain")


@pytest.mark.parametrize("sentence", ["店長がおられます。", "ご注文されました商品は明日届きます。", "こちらの資料を拝見してください。"])
def test_misused_keigo_is_found(sentence):
    assert japanese.register(sentence).keigo_misuse


def test_plain_form_to_a_shopper_lowers_tone_and_mixed_endings_lower_grammar(rubric):
    def case(text):
        return TestCase(test_id="j", intent="product_question", locale="ja-JP", query="在庫はありますか？", response=text)
    polite = offline_verdict(case("はい、在庫がございます。ぜひどうぞ。"), rubric, ["grammar", "tone"])
    plain = offline_verdict(case("うん、在庫あるよ。早めに買ってね。"), rubric, ["tone"]).sub_scores
    mixed = offline_verdict(case("在庫がございます。早めに買ってね。"), rubric, ["grammar"]).sub_scores
    assert plain["tone"] == 0.0 and "tone" in polite.abstained
    assert mixed["grammar"] < polite.sub_scores["grammar"]


@pytest.mark.parametrize("text", ["You can cancel as long as the order hasn't",
                                  "返金につきましては、返品商品の到着を確認したのち、"])
def test_an_answer_cut_off_mid_sentence_is_truncated(text):
    assert truncated(text)


@pytest.mark.parametrize("text", ["Returns are accepted within 15 days.", "- Uzumaki — $22.99 — in stock",
                                  "ぜひお楽しみください"])
def test_a_finished_answer_or_a_list_line_is_not_truncated(text):
    assert not truncated(text)


@pytest.mark.parametrize(("sentence", "kind"), [
    ("Red door cafe is an cheap restaurant.", "'an cheap'"),
    ("Canteen, is moderate.", "comma between"),
    ("Hotel drisco is near pacific heights has internet.", "two verbs"),
    ("He hotel tomo is located near japantown.", "subject pronoun"),
    ("There is a hotel called in the wharf inn.", "without the name"),
    ("Do you not to restaurant restaurants that are the", "ends on"),
])
def test_general_english_error_patterns(sentence, kind):
    assert any(kind in e for e in english_errors(sentence)), english_errors(sentence)


@pytest.mark.parametrize("sentence", ["The hotel diva is in the moderate price range.",
                                      "Is there anything else I can help you with?",
                                      "They both are great, and each one is in stock."])
def test_ordinary_sentences_have_no_error_pattern(sentence):
    assert english_errors(sentence) == []


def test_a_repeated_statement_lowers_grammar(rubric):
    once = TestCase(test_id="r", intent="faq", query="Refund?", response="Refunds are issued within 5-7 business days.")
    again = once.model_copy(update={"response": "Refunds are issued within 5-7 business days. The refund is issued "
                                                "within 5-7 business days. Again, refunds are issued within 5-7 days."})
    assert (offline_verdict(again, rubric, ["grammar"]).sub_scores["grammar"]
            < offline_verdict(once, rubric, ["grammar"]).sub_scores["grammar"])


@pytest.fixture(scope="module")
def judged_slots(rubric):
    """Every sub-score the checks leave to the judge on the golden and paraphrase sets, with the
    offline judge's answer."""
    catalog = load_catalog(ROOT / "datasets/mangaassist/catalog.json")
    out: dict[str, list[tuple[float | None, list[str]]]] = {}
    for name in ("golden", "paraphrase"):
        for case in load_dataset(ROOT / f"datasets/mangaassist/{name}.jsonl", catalog).cases:
            for plan in plan_case(MANGAASSIST, case, rubric).values():
                if plan.request is None:
                    continue
                verdict = offline_verdict(case, rubric, list(plan.request.sub_scores))
                for sub in plan.request.sub_scores:
                    out.setdefault(sub, []).append((verdict.sub_scores.get(sub), verdict.evidence))
    return out


def test_no_offline_signal_returns_a_constant(judged_slots):
    """Over the labelled sets every signal the judge is asked for takes several values, and every
    value comes with the evidence it was read from."""
    for sub, answers in judged_slots.items():
        values = [v for v, _ in answers if v is not None]
        # persona breaks are the checks' (both branches below); policy_safety reads findings only, each a
        # verdict at its level, and abstains otherwise (tests/unit/test_safety.py)
        if len(values) >= 10 and sub not in ("persona", "policy_safety"):
            assert len(set(values)) >= 2, (sub, sorted(set(values)))
        assert all(any(e.startswith(sub) for e in evidence) for v, evidence in answers if v is not None), sub
    assert set(judged_slots) <= {n for d in DIMENSIONS for n in MANGAASSIST.signals(d).by_sub_score}


def test_the_offline_judge_abstains_on_a_minority_of_what_it_is_asked(judged_slots):
    """It abstains where it has nothing to read (no claim held to the evidence). Tone is read only
    for defects of register and policy_safety only for findings, so they abstain on most answers by
    design and are not counted here."""
    answers = [v for sub, slots in judged_slots.items() if sub not in ("tone", "policy_safety") for v, _ in slots]
    abstained = sum(1 for v in answers if v is None)
    assert abstained <= 0.05 * len(answers), json.dumps({s: sum(v is None for v, _ in a) for s, a in judged_slots.items()})


def test_persona_reads_who_the_answer_says_it_is(rubric):
    def case(text):
        return TestCase(test_id="p", intent="chitchat", query="Who are you?", response=text)
    assert offline_verdict(case("I'm MangaAssist, happy to help!"), rubric, ["persona"]).sub_scores["persona"] == 1.0
    assert offline_verdict(case("I'm your manga buddy, so ask away!"), rubric, ["persona"]).sub_scores["persona"] < 0.6
