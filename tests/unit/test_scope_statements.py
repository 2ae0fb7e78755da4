"""What a campaign covers and who pays a cost, given both ways: in one answer, against an earlier
turn, against the knowledge (claims/eligibility.py). Each reading has its near-miss that stays silent."""

from __future__ import annotations

from fmquality.claims import eligibility
from fmquality.domain.case import TestCase
from fmquality.schemes.mangaassist.consistency import check as consistency
from fmquality.schemes.mangaassist.factual_accuracy import check as factual_accuracy


def rules(report) -> list[str]:
    return [f.rule for f in report.hard_failures]


def _ja(response: str, chunks=(), history=()) -> TestCase:
    return TestCase.model_validate({"test_id": "t", "intent": "promotion", "locale": "ja-JP", "query": "対象ですか？",
                                    "response": response, "retrieved_chunks": list(chunks),
                                    "conversation_history": list(history)})


CAMPAIGN = ["コミックまとめ買いキャンペーン：紙のコミックス3冊以上のご購入で20%OFF。電子書籍は対象外でございます。"]


def test_an_edition_the_knowledge_excludes_said_to_be_covered_contradicts_it():
    case = _ja("はい、『薬屋のひとりごと』の電子書籍版も、キャンペーン20%OFFの対象でございます。", CAMPAIGN)
    assert "policy_contradiction" in rules(factual_accuracy.check(case, None))


def test_the_exclusion_repeated_or_another_edition_covered_is_not_a_contradiction():
    for answer in ("電子書籍版は対象外でございます。紙のコミックスをお選びくださいませ。",
                   "『薬屋のひとりごと』の紙のコミックスは対象でございます。"):
        assert "policy_contradiction" not in rules(factual_accuracy.check(_ja(answer, CAMPAIGN), None))


def test_a_rule_narrower_than_the_answers_topic_does_not_speak_for_it():
    chunks = ["返送料：お客様都合による返品の返送料はお客様のご負担となります。不良品の場合は当社負担でございます。"]
    case = _ja("破損がございましたので、返送料は当社負担でございます。", chunks)  # a damaged item: the store pays
    assert "policy_contradiction" not in rules(factual_accuracy.check(case, None))


def test_one_thing_covered_and_not_covered_in_one_answer_contradicts_itself(rubric):
    answer = ("はい、『薬屋のひとりごと』の電子書籍版も対象でございます。"
              "なお、本キャンペーンは紙のコミックスのみが対象となっており、電子書籍版は対象外でございます。")
    assert "self_contradiction" in rules(consistency.check(_ja(answer), rubric))
    # The campaign's own scope (…のみが対象) is not a statement about the campaign being covered.
    assert eligibility.scopes("本キャンペーンは紙のコミックスのみが対象となっております。") == []


EARLIER = [{"role": "user", "content": "『ブルーロック』は対象ですか？"},
           {"role": "assistant", "content": "はい、『ブルーロック』は講談社の作品のため対象です。"}]


def test_covered_in_an_earlier_turn_and_excluded_now_contradicts_the_turn(rubric):
    case = _ja("『ブルーロック』は今回のセール対象外のため、通常価格でのご購入となります。", history=EARLIER)
    assert "turn_contradiction" in rules(consistency.check(case, rubric))
    again = _ja("『ブルーロック』は対象ですので、20%OFFでご購入いただけます。", history=EARLIER)
    assert "turn_contradiction" not in rules(consistency.check(again, rubric))


def test_as_i_said_earlier_is_no_acknowledgement_of_a_change(rubric):
    history = [{"role": "user", "content": "返送料は？"},
               {"role": "assistant", "content": "お客様都合による返品のため、返送料はお客様のご負担となります。"}]
    claimed = _ja("先ほども申し上げましたとおり、返送料は当社負担でございます。", history=history)
    assert "turn_contradiction" in rules(consistency.check(claimed, rubric))
    corrected = _ja("先ほどのご案内に誤りがございました。訂正いたします。返送料は当社負担でございます。", history=history)
    assert "turn_contradiction" not in rules(consistency.check(corrected, rubric))
