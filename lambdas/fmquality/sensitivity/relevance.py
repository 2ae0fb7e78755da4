"""Relevance operators: the answer no longer answers this shopper. Another case's good answer given
here, a polite reply that answers nothing, or an unrequested promotion in place of the answer."""

from __future__ import annotations

from fmquality.domain.case import TestCase
from fmquality.sensitivity.base import Context, Perturbed, answer, pick, with_response


def other_case_answer(case: TestCase, ctx: Context) -> Perturbed | None:
    """The acceptable answer of another case of the same locale: another intent, no catalog entry in
    common, another query. Right for someone, wrong for this shopper."""
    asins = {i.asin for i in case.catalog}
    pool = [o for o in ctx.others if o.test_id != case.test_id and o.locale == case.locale and o.intent != case.intent
            and o.response and o.response.strip() != answer(case).strip() and o.query != case.query
            and not asins & {i.asin for i in o.catalog}]
    if not pool:
        return None
    other = pick(ctx, sorted(pool, key=lambda o: o.test_id))
    # The products the borrowed answer names are in play, as a run resolves them from the answer: the
    # defect is the answer's relevance, not a product missing from the catalog.
    catalog = case.catalog + [i for i in other.catalog if i.asin not in asins]
    return Perturbed(with_response(case, other.response, catalog=catalog), f"answer of {other.test_id} ({other.intent})")


NON_ANSWERS = {
    "en": ("Thanks so much for reaching out! I'm here to help with anything manga-related, so feel free to ask me "
           "about titles, orders or store policies anytime. Have a great day!",
           "Great question! There are lots of things to consider here, and every shopper's situation is a little "
           "different. Let me know if there's anything else I can help you with today."),
    "ja": ("お問い合わせいただきありがとうございます。マンガに関することでしたら、作品やご注文、各種ご利用方法など、"
           "どのようなことでもお気軽にお尋ねくださいませ。",
           "ご質問ありがとうございます。お客様によってご状況はさまざまですので、いろいろな点をご検討いただければと存じます。"
           "ほかにもご不明な点がございましたら、お気軽にお知らせください。"),
}


def question_unanswered(case: TestCase, ctx: Context) -> Perturbed | None:
    """A courteous reply that answers nothing (not for small talk, where a courtesy is the answer)."""
    if case.intent == "chitchat":
        return None
    text = pick(ctx, NON_ANSWERS[_lang(case)])
    return Perturbed(with_response(case, text), "answer replaced by a reply that answers nothing")


PROMOTIONS = {
    "en": ("Big news first: our Summer Manga Festival is on now! Hundreds of box sets, exclusive bonus art cards "
           "and new arrivals every single day. Head over to the festival page and treat yourself to your next "
           "favourite series before the best editions are gone!",),
    "ja": ("ただいま「夏のマンガフェスティバル」を開催中です！人気シリーズのセットや特典付きの商品を多数ご用意しております。"
           "ぜひフェスティバル特設ページをご覧いただき、次にハマる作品を見つけてくださいませ！",),
}


def promotion_takeover(case: TestCase, ctx: Context) -> Perturbed | None:
    """An unrequested store promotion in place of the answer (not where a promotion is what was asked)."""
    if case.intent in ("promotion", "chitchat"):
        return None
    text = pick(ctx, PROMOTIONS[_lang(case)])
    return Perturbed(with_response(case, text), "answer replaced by an unrequested promotion")


def _lang(case: TestCase) -> str:
    return "ja" if case.is_japanese else "en"
