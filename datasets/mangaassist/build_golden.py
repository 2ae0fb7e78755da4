"""Build datasets/mangaassist/golden.jsonl from the readable case definitions below.

    python datasets/mangaassist/build_golden.py          # rewrite golden.jsonl
    python datasets/mangaassist/build_golden.py --check  # exit 1 if golden.jsonl is out of date

Each ``situation`` is one shopper situation (query, context, evidence) with one or more acceptable
answers and, usually, defective variants of the same situation. The script is deterministic: the same
definitions always give the same bytes. Catalog entries are copied from catalog.json by ASIN, so a case
never carries a price or stock status that differs from the shipped catalog.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATALOG_PATH = HERE / "catalog.json"
GOLDEN_PATH = HERE / "golden.jsonl"

CATALOG: dict[str, dict] = {item["asin"]: item for item in json.loads(CATALOG_PATH.read_text(encoding="utf-8"))}
CASES: list[dict] = []


def situation(
    sid: str,
    intent: str,
    query: str,
    *,
    good: str | list[str] | None = None,
    bad: dict[str, tuple[str, str]] | None = None,
    locale: str = "en-US",
    history: list[tuple[str, str]] = (),
    page: dict | None = None,
    products: list[str] = (),
    extra: list[str] = (),
    facts: list[str] = (),
    forbidden: list[str] = (),
    chunks: list[str] = (),
    reference: str | None = None,
    tags: list[str] = (),
    good_tags: list[str] = (),
) -> None:
    """Add the variants of one situation.

    good: the acceptable answer (or several: ids -good, -good-2, ...).
    bad: {suffix: (defect description, answer)}: ids -bad-<suffix>.
    products: ASINs that should appear in the answer (expected_products); extra: other ASINs in play.
    good_tags: tags only the first acceptable variant carries (e.g. "regression": one solid pass per situation).
    """
    goods = [good] if isinstance(good, str) else list(good or [])
    asins = list(dict.fromkeys([*products, *extra]))
    base: dict = {"intent": intent, "locale": locale, "query": query}
    if history:
        base["conversation_history"] = [{"role": role, "content": content} for role, content in history]
    if page:
        base["page_context"] = page
    auto_tags = []
    if locale.startswith("ja"):
        auto_tags.append("japanese")
    if any(role == "assistant" for role, _ in history):
        auto_tags.append("multi_turn")
    shared = {
        "expected_products": list(products),
        "expected_facts": list(facts),
        "forbidden_content": list(forbidden),
        "reference_response": reference,
        "retrieved_chunks": list(chunks),
        "catalog": [dict(CATALOG[a]) for a in asins],
    }
    variants = [
        (f"{sid}-good", text, None, [*tags, *good_tags]) if i == 0 else (f"{sid}-good-{i + 1}", text, None, list(tags))
        for i, text in enumerate(goods)
    ]
    variants += [(f"{sid}-bad-{suffix}", text, defect, list(tags)) for suffix, (defect, text) in (bad or {}).items()]
    for test_id, text, defect, case_tags in variants:
        case = {"test_id": test_id, **base, "response": text}
        for key, value in shared.items():
            if value:  # leave out empty optional fields to keep lines readable
                case[key] = value
        case["tags"] = list(dict.fromkeys([*case_tags, *auto_tags]))
        case["label"] = {"acceptable": True} if defect is None else {"acceptable": False, "defect": defect}
        CASES.append(case)


def order(order_id: str, status: str, ship_date: str | None, eta: str | None) -> dict:
    return {"order": {"order_id": order_id, "status": status, "ship_date": ship_date, "eta": eta}}


# ------------------------------------------------------------------------------------------------
# Knowledge-base passages (what retrieval returns for policy questions)
# ------------------------------------------------------------------------------------------------

KB_RETURNS = ("Return policy: unopened items can be returned within 15 days of delivery for a full refund. "
              "Opened items cannot be returned unless they arrived damaged. Start a return from Your Orders > Return items.")
KB_REFUND = "Refunds: once we receive your return, the refund is issued to the original payment method within 5–7 business days."
KB_DAMAGED = ("Damaged or misprinted items: report them within 15 days of delivery and we will send a free replacement "
              "or a full refund; return shipping is free for damaged items.")
KB_SHIP_US = ("US shipping: standard shipping is free on orders over $35. Orders under $35 pay $4.99 for standard shipping. "
              "Standard delivery takes 3–5 business days.")
KB_PREORDER = ("Pre-orders: you are charged when the item ships, not when you place the pre-order. "
               "You can cancel a pre-order at any time before it ships.")
KB_POINTS = ("MangaAssist Points: members earn 1% back in points on every purchase. "
             "Points can be applied at checkout on a later order.")
KB_PAYMENT = "Payment methods (US): Visa, Mastercard, American Express, Discover, PayPal and MangaAssist gift cards."
KB_DECLINED = ("Declined cards: check that the billing address matches the card and that the card has not expired, "
               "or choose another payment method. We never charge a declined card.")
KB_PROMO_CODE = ("Promo codes: enter the code in the Promo code box on the checkout page and select Apply. Only one promo "
                 "code can be used per order, and promo codes cannot be combined with other discounts.")
KB_CANCEL = ("Cancelling an order: go to Your Orders and select Cancel items. Orders can be cancelled until they enter "
             "the shipping process; after that, start a return instead.")
KB_GIFT = "Gift wrapping: available at checkout for $3.99 per item, with an optional gift message. Gift receipts never show prices."
KB_CHECKOUT_LOAD = ("Checkout problems: if the checkout page does not load or times out, refresh the page, clear your "
                    "browser cache or use the MangaAssist app. Items stay saved in your cart.")
KB_SHONEN_SALE = ("Spring Shonen Sale: 20% off all shonen manga through 2024-04-30. No code needed; the discount is "
                  "applied automatically at checkout.")
KB_HORROR_WEEK = "Horror Week: the code HORRORFEST gives 15% off horror manga until 2024-10-31. One use per customer."
KB_STUDENT = ("Discounts: MangaAssist does not currently offer a student discount. All members earn 1% back in points "
              "on every purchase.")

KB_RETURNS_JA = ("返品について：未開封の商品は、商品到着後15日以内であれば返品できます。開封済みの商品は、破損していた場合を除き"
                 "返品をお受けできません。返品は「注文履歴」から手続きできます。")
KB_REFUND_JA = "返金について：返品商品の到着を確認後、5〜7営業日以内に元のお支払い方法へ返金します。"
KB_DAMAGED_JA = ("破損・印刷不良について：商品到着後15日以内にご連絡いただければ、無料で交換または返金いたします。"
                 "破損商品の返送料は当店が負担します。")
KB_SHIP_JA = "日本国内の配送：¥3,000以上のご注文は送料無料です。¥3,000未満のご注文は送料¥450がかかります。"
KB_PREORDER_JA = "予約商品：代金は商品の発送時に請求されます。予約注文は発送前であればいつでもキャンセルできます。"
KB_POINTS_JA = "ポイント：すべてのご購入で1%がポイントとして還元されます。ポイントはお支払い時に1ポイント＝1円として利用できます。"
KB_PAYMENT_JA = "お支払い方法（日本）：クレジットカード、PayPal、コンビニ払いがご利用いただけます。コンビニ払いの支払期限はご注文から3日以内です。"
KB_SHONEN_SALE_JA = "春の少年漫画セール：2024-04-30まで少年漫画全品20%オフ。クーポンコードは不要で、割引はご購入手続き時に自動で適用されます。"
KB_POINTS_CAMPAIGN_JA = "ポイント2倍キャンペーン：2024-06-30まで、全商品のポイント還元率が通常の1%から2%になります。エントリーは不要です。"

# Stale phrasings of the return window that must never appear (incident 2).
STALE_RETURN_EN = ["30-day", "30 days"]
STALE_RETURN_JA = ["30日"]

# ================================================================================================
# recommendation
# ================================================================================================

# Incident 1: a horror request answered with an unrelated shonen promotion first.
SHONEN_PROMO_DEFECT = "opens with an unrelated shonen promotion before answering the horror request"

situation(
    "rec-horror-001", "recommendation", "I'm in the mood for some really creepy horror manga. What do you recommend?",
    products=["B0HRUZMK01", "B0HRTOMIE1", "B0HRDRFTC1"], extra=["B0SHKMTSU1", "B0SHJJKSN1"],
    facts=["Uzumaki by Junji Ito", "The Drifting Classroom by Kazuo Umezu"],
    tags=["incident-1"], good_tags=["regression"],
    good=["Great choice — horror manga does creepy like nothing else! Here are my top picks:\n"
          "- Uzumaki — $22.99 — in stock\n"
          "- Tomie — $19.99 — in stock\n"
          "- The Drifting Classroom — $24.99 — limited stock\n"
          "Uzumaki by Junji Ito is a masterpiece about a town slowly consumed by spirals, Tomie follows a girl who "
          "keeps coming back no matter what happens to her, and The Drifting Classroom by Kazuo Umezu is a classic "
          "survival nightmare. Happy (and scary) reading!",
          "Ooh, you've come to the right place for chills! My favorites:\n"
          "- Uzumaki — $22.99 — in stock\n"
          "- Tomie — $19.99 — in stock\n"
          "- The Drifting Classroom — $24.99 — limited stock\n"
          "If you start anywhere, make it Uzumaki by Junji Ito — a whole town obsessed with spirals. The Drifting "
          "Classroom by Kazuo Umezu is a true classic, so grab it while stock lasts!"],
    bad={"promo": (SHONEN_PROMO_DEFECT,
                   "Don't miss our Shonen Summer Sale — big savings on Demon Slayer and Jujutsu Kaisen this week, grab "
                   "them before they're gone! Now, for horror:\n"
                   "- Uzumaki — $22.99 — in stock\n"
                   "- Tomie — $19.99 — in stock\n"
                   "- The Drifting Classroom — $24.99 — limited stock\n"
                   "Uzumaki is Junji Ito's masterpiece about a town consumed by spirals, and Kazuo Umezu's The "
                   "Drifting Classroom is a classic survival nightmare.")},
)

situation(
    "rec-horror-002", "recommendation",
    "Looking for a horror manga gift for my sister who loves Junji Ito. She already owns Uzumaki.",
    products=["B0HRTOMIE1", "B0HRGYOJI1"], extra=["B0HRUZMK01", "B0SHJJKSN1"],
    facts=["Tomie is by Junji Ito", "Gyo is out of stock"],
    tags=["incident-1"],
    good=("What a thoughtful gift! Since she already has Uzumaki, more Junji Ito is the way to go:\n"
          "- Tomie — $19.99 — in stock\n"
          "- Gyo — $14.99 — out of stock\n"
          "Tomie is a chilling collection of stories about a girl who simply won't stay dead, and it can ship "
          "right away, so it's the safer pick for a gift. Gyo, with its nightmarish walking fish, is brilliant "
          "too, but it's out of stock at the moment. I'd be glad to let you know when it's back!"),
    bad={
        "promo": (SHONEN_PROMO_DEFECT,
                  "Big news: Jujutsu Kaisen is this week's featured shonen pick, and every shonen fan needs it on "
                  "their shelf! As for your sister:\n"
                  "- Tomie — $19.99 — in stock\n"
                  "- Gyo — $14.99 — out of stock\n"
                  "Tomie is a chilling Junji Ito collection and ships right away."),
    },
)

situation(
    "rec-horror-003", "recommendation", "Any psychological horror that isn't too gory? I scare easily but love atmosphere.",
    products=["B0HRHKRSN1", "B0HRMIERU1"],
    facts=["The Summer Hikaru Died is available for pre-order", "Mieruko-chan is by Tomoki Izumi"],
    tags=["incident-1"],
    good=("Love that request — creeping dread beats gore every time! Try these:\n"
          "- The Summer Hikaru Died — $13.99 — available for pre-order\n"
          "- Mieruko-chan — $12.99 — in stock\n"
          "The Summer Hikaru Died by Mokumokuren is a quiet, unsettling story about a friend who comes back not "
          "quite himself. Mieruko-chan by Tomoki Izumi mixes real chills with dark comedy as a girl acts as if she "
          "can't see the ghosts around her. Both are light on gore and heavy on atmosphere!"),
)

situation(
    "rec-horror-004", "recommendation", "怖いホラー漫画のおすすめを教えてください。", locale="ja-JP",
    products=["B0JPUZMKI2", "B0JPTOMIE2", "B0JPHKRSN2"],
    facts=["うずまき（Uzumaki）", "富江（Tomie）"],
    tags=["incident-1"],
    good=["ホラー好きの方にぜひ読んでいただきたい作品をご紹介します！\n"
          "- うずまき（Uzumaki）— ¥2,420 — 在庫あり\n"
          "- 富江（Tomie）— ¥1,980 — 在庫あり\n"
          "- 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり\n"
          "伊藤潤二（Junji Ito）先生の二作品は、じわじわと日常が崩れていく怖さが魅力です。"
          "光が死んだ夏は、静かで不穏な空気がたまらない青春ホラーです。ぜひお楽しみください！",
          "背筋がぞっとする作品をお探しですね！こちらはいかがでしょうか。\n"
          "- うずまき（Uzumaki）— ¥2,420 — 在庫あり\n"
          "- 富江（Tomie）— ¥1,980 — 在庫あり\n"
          "- 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり\n"
          "どれも今すぐお届けできます。夜にひとりで読むのは、少し勇気がいるかもしれません！"],
    bad={"promo": (SHONEN_PROMO_DEFECT,
                   "ただいま少年漫画フェアを開催中です！人気の少年漫画がお得になっていますので、ぜひご覧ください。"
                   "さて、ホラー漫画のおすすめです。\n"
                   "- うずまき（Uzumaki）— ¥2,420 — 在庫あり\n"
                   "- 富江（Tomie）— ¥1,980 — 在庫あり\n"
                   "- 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり")},
)

situation(
    "rec-horror-005", "recommendation", "夏に読みたいホラー漫画はありますか？", locale="ja-JP",
    products=["B0JPHKRSN2", "B0JPUZMKI2"],
    facts=["光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）"],
    tags=["incident-1"],
    good=("夏にぴったりのホラー漫画をご紹介しますね！\n"
          "- 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり\n"
          "- うずまき（Uzumaki）— ¥2,420 — 在庫あり\n"
          "田舎の夏の空気と、親友が別の何かに入れ替わった不気味さが重なる前者は、まさに夏に読みたい一冊です。"
          "後者は伊藤潤二（Junji Ito）先生の代表作で、読み終えたあともしばらく渦が頭から離れません。"),
    bad={
        "promo": (SHONEN_PROMO_DEFECT,
                  "少年漫画の夏セールが始まりました！バトル漫画をまとめ買いするなら今がチャンスです。"
                  "ホラーでしたら、こちらはいかがでしょうか。\n"
                  "- 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり\n"
                  "- うずまき（Uzumaki）— ¥2,420 — 在庫あり"),
        "english": ("answers a Japanese-speaking shopper in English",
                    "Great summer horror picks:\n"
                    "- The Summer Hikaru Died — ¥748 — in stock\n"
                    "- Uzumaki — ¥2,420 — in stock\n"
                    "Both are perfect for a hot, eerie summer night!"),
    },
)

situation(
    "rec-shonen-006", "recommendation", "What's a good shonen series for someone new to manga?",
    products=["B0SHKMTSU1", "B0SHSPYFM1", "B0SHFMALC1"],
    facts=["Fullmetal Alchemist by Hiromu Arakawa"],
    good_tags=["regression"],
    good=("Welcome to manga — you're in for a treat! These are perfect starting points:\n"
          "- Demon Slayer — $9.99 — in stock\n"
          "- Spy x Family — $9.99 — in stock\n"
          "- Fullmetal Alchemist — $12.99 — in stock\n"
          "Demon Slayer is fast and heartfelt, Spy x Family is a hilarious found-family comedy with spies, and "
          "Fullmetal Alchemist by Hiromu Arakawa is a complete, beautifully plotted adventure. You can't go wrong!"),
    bad={"nocards": ("recommends products in prose without product cards (no price or availability)",
                     "Welcome to manga! I'd suggest Demon Slayer, which is fast and heartfelt, Spy x Family, a "
                     "hilarious comedy about a spy family, and Fullmetal Alchemist by Hiromu Arakawa, a beautifully "
                     "plotted adventure. Any of these would be a great start.")},
)

situation(
    "rec-romance-007", "recommendation", "Can you recommend a sweet romance manga?",
    products=["B0RMKMTDK1", "B0RMKAGYA1", "B0RMHRMYA1"],
    facts=["Kaguya-sama by Aka Akasaka"],
    good=("Aww, sweet romance is the best! Here are some favorites:\n"
          "- Kimi ni Todoke: From Me to You — $12.99 — in stock\n"
          "- Kaguya-sama: Love Is War — $11.99 — in stock\n"
          "- Horimiya — $12.99 — limited stock\n"
          "Kimi ni Todoke is a gentle slow burn, Kaguya-sama by Aka Akasaka turns a crush into a hilarious battle of "
          "wits, and Horimiya is pure cozy high-school romance."),
    bad={"price": ("gives Kaguya-sama's price as $14.99; the catalog says $11.99",
                   "Aww, sweet romance is the best! Here are some favorites:\n"
                   "- Kimi ni Todoke: From Me to You — $12.99 — in stock\n"
                   "- Kaguya-sama: Love Is War — $14.99 — in stock\n"
                   "- Horimiya — $12.99 — limited stock\n"
                   "Kimi ni Todoke is a gentle slow burn, and Kaguya-sama turns a crush into a battle of wits.")},
)

situation(
    "rec-sports-008", "recommendation", "My son loves basketball. Any sports manga he'd enjoy?",
    products=["B0SPSLMDK1", "B0SPKUROK1"], extra=["B0SPHAIKY1"],
    facts=["Slam Dunk by Takehiko Inoue", "Kuroko's Basketball is out of stock"],
    good=("Basketball manga are such a thrill! Here's what I'd suggest:\n"
          "- Slam Dunk — $12.99 — in stock\n"
          "- Kuroko's Basketball — $14.99 — out of stock\n"
          "Slam Dunk by Takehiko Inoue is the legendary basketball manga, full of heart and humor, and it's ready "
          "to ship. Kuroko's Basketball is a fun, high-energy pick too, but it's out of stock right now."),
)

situation(
    "rec-scifi-009", "recommendation", "I want classic cyberpunk manga. Where should I start?",
    products=["B0SFAKIRA1", "B0SFGHOST1"],
    facts=["Akira by Katsuhiro Otomo", "Ghost in the Shell by Masamune Shirow"],
    good_tags=["regression"],
    good=("Cyberpunk classics — excellent taste! Start with these:\n"
          "- Akira — $39.99 — in stock\n"
          "- Ghost in the Shell — $24.99 — in stock\n"
          "Akira by Katsuhiro Otomo is a sprawling, explosive ride through Neo-Tokyo, and Ghost in the Shell by "
          "Masamune Shirow is the thoughtful cyborg-detective story that shaped the whole genre."),
    bad={"toolong": ("far too long for a recommendation: a rambling essay well past the length limit",
                     "Cyberpunk classics — excellent taste! Let me tell you everything about them.\n"
                     "- Akira — $39.99 — in stock\n"
                     "- Ghost in the Shell — $24.99 — in stock\n"
                     + "Katsuhiro Otomo's Akira is a sprawling, explosive ride through Neo-Tokyo, with motorcycle "
                       "gangs, secret government projects, psychic children and a city that keeps collapsing and "
                       "rebuilding itself. The artwork is astonishingly detailed, with every building, every pipe "
                       "and every crowd drawn by hand, and the story keeps escalating until the final chapters. "
                       "Masamune Shirow's Ghost in the Shell, meanwhile, follows a cyborg security unit through "
                       "hacking cases, political intrigue and long philosophical discussions about what makes a "
                       "person a person when memories can be edited and bodies replaced. The margins are packed "
                       "with the author's notes on technology, weapons and networks, so you can spend hours "
                       "reading them. Both series inspired films, games and countless later works, and both reward "
                       "rereading, because you notice new details each time. If you like these, you may also want "
                       "to explore other works from the same era, read interviews with the creators, compare the "
                       "manga with the animated adaptations, look at how the cities are designed, and think about "
                       "how their predictions about technology compare with the world we live in today, which is "
                       "a fascinating exercise for any science fiction fan and a great topic for discussion.")},
)

situation(
    "rec-seinen-010", "recommendation", "I loved Berserk. Anything else dark and mature like it?",
    products=["B0SNVNLND1", "B0SNPUNPN1"], extra=["B0SNBRSRK1"],
    facts=["Vinland Saga by Makoto Yukimura", "Goodnight Punpun by Inio Asano"],
    good=("If Berserk hooked you, you'll love these mature epics:\n"
          "- Vinland Saga — $24.99 — in stock\n"
          "- Goodnight Punpun — $29.99 — limited stock\n"
          "Vinland Saga by Makoto Yukimura is a brutal Viking revenge saga that grows into something deeply human, "
          "and Goodnight Punpun by Inio Asano is a dark, unforgettable coming-of-age story."),
    bad={"author": ("attributes Vinland Saga to Takehiko Inoue; the author is Makoto Yukimura",
                    "If Berserk hooked you, you'll love these mature epics:\n"
                    "- Vinland Saga — $24.99 — in stock\n"
                    "- Goodnight Punpun — $29.99 — limited stock\n"
                    "Takehiko Inoue's Vinland Saga is a brutal Viking revenge saga, and Inio Asano's Goodnight "
                    "Punpun is a dark coming-of-age story.")},
)

situation(
    "rec-slice-011", "recommendation", "癒される日常系の漫画を探しています。おすすめはありますか？", locale="ja-JP",
    products=["B0JPYTSBA2", "B0JPFRIRN2"],
    facts=["よつばと!（Yotsuba to! / Yotsuba&!）"],
    good=("ほっと癒される作品でしたら、こちらがおすすめです！\n"
          "- よつばと!（Yotsuba to! / Yotsuba&!）— ¥770 — 在庫あり\n"
          "- 葬送のフリーレン（Soso no Furiren / Frieren: Beyond Journey's End）— ¥594 — 予約受付中\n"
          "元気な女の子の毎日を描いた作品は、読むだけで笑顔になれます。"
          "フリーレンは旅の思い出を静かにたどる物語で、やさしい余韻が心に残ります。"),
)

situation(
    "rec-mystery-012", "recommendation", "I just finished Monster by Naoki Urasawa. What mystery should I read next?",
    products=["B0SFPLUTO1", "B0MYDTHNT1"], extra=["B0SNMONST1", "B0RMKAGYA1"],
    facts=["Pluto by Naoki Urasawa"],
    good=("Monster is such a ride — great question! For your next mystery:\n"
          "- Pluto — $14.99 — in stock\n"
          "- Death Note — $9.99 — in stock\n"
          "Pluto by Naoki Urasawa is a gripping robot murder mystery built on Osamu Tezuka's Astro Boy, so it has "
          "the same slow-burn suspense you loved. Death Note is a razor-sharp cat-and-mouse thriller."),
    bad={"offgenre": ("recommends an off-genre romance comedy and leaves out the expected Pluto",
                      "Monster is such a ride! For your next read:\n"
                      "- Death Note — $9.99 — in stock\n"
                      "- Kaguya-sama: Love Is War — $11.99 — in stock\n"
                      "Death Note is a sharp thriller, and Kaguya-sama is a hilarious romantic comedy.")},
)

situation(
    "rec-followup-013", "recommendation", "Chainsaw Man sounds too gory for me. Anything gentler?",
    history=[("user", "I finished Demon Slayer, what should I read next?"),
             ("assistant", "Great timing! Here are three follow-ups:\n"
                           "1. Jujutsu Kaisen — $9.99 — in stock\n"
                           "2. Chainsaw Man — $11.99 — in stock\n"
                           "3. Fullmetal Alchemist — $12.99 — in stock")],
    products=["B0SHSPYFM1", "B0SHFRIRN1"], extra=["B0SHJJKSN1", "B0SHCHNSW1", "B0SHFMALC1"],
    good=("Totally fair — let's keep the heart and drop the gore! These are much gentler:\n"
          "- Spy x Family — $9.99 — in stock\n"
          "- Frieren: Beyond Journey's End — $11.99 — in stock\n"
          "Spy x Family is a warm, funny story about a fake family with real feelings, and Frieren is a calm, "
          "moving fantasy about what happens after the adventure ends."),
    bad={"ignores-context": ("ignores the earlier turn and recommends Chainsaw Man again after the shopper rejected it",
                             "Sure! You might enjoy these:\n"
                             "- Chainsaw Man — $11.99 — in stock\n"
                             "- Spy x Family — $9.99 — in stock\n"
                             "Chainsaw Man is a wild action ride, and Spy x Family is a funny family comedy.")},
)

situation(
    "rec-followup-014", "recommendation", "在庫があるものだけ教えてください。", locale="ja-JP",
    history=[("user", "少年漫画でおすすめはありますか？"),
             ("assistant", "人気の少年漫画をご紹介します！\n"
                           "1. 進撃の巨人（Shingeki no Kyojin / Attack on Titan）— ¥528 — 在庫あり\n"
                           "2. 呪術廻戦（Jujutsu Kaisen）— ¥484 — 残りわずか\n"
                           "3. 鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）— ¥484 — 在庫切れ")],
    products=["B0JPSNGKI2", "B0JPJJKSN2"], extra=["B0JPKMTSU2"],
    facts=["鬼滅の刃は在庫切れ"],
    good=("かしこまりました！今すぐお届けできるのはこちらです。\n"
          "- 進撃の巨人（Shingeki no Kyojin / Attack on Titan）— ¥528 — 在庫あり\n"
          "- 呪術廻戦（Jujutsu Kaisen）— ¥484 — 残りわずか\n"
          "鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）は在庫切れのため、入荷しましたらお知らせすることもできます。"),
    bad={"stock": ("says Demon Slayer (Japan edition) is in stock; the catalog and the earlier turn say out of stock",
                   "かしこまりました！在庫があるのはこちらです。\n"
                   "- 進撃の巨人（Shingeki no Kyojin / Attack on Titan）— ¥528 — 在庫あり\n"
                   "- 呪術廻戦（Jujutsu Kaisen）— ¥484 — 残りわずか\n"
                   "- 鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）— ¥484 — 在庫あり")},
)

# ================================================================================================
# product_question
# ================================================================================================

# Incident 3: "the second one" must resolve to the second item of the earlier numbered list.
THIRD_ITEM_DEFECT = "answers about the third listed item instead of the second one the shopper asked about"

situation(
    "pq-second-001", "product_question", "Tell me about the second one.",
    history=[("user", "Can you recommend some horror manga?"),
             ("assistant", "Absolutely! Here are three spine-chillers:\n"
                           "1. Uzumaki — $22.99 — in stock\n"
                           "2. Tomie — $19.99 — in stock\n"
                           "3. Gyo — $14.99 — out of stock")],
    products=["B0HRTOMIE1"], extra=["B0HRUZMK01", "B0HRGYOJI1"],
    facts=["Tomie by Junji Ito", "Tomie is $19.99"],
    tags=["incident-3"], good_tags=["regression"],
    reference=("Tomie is Junji Ito's collection of linked stories about a beautiful girl who drives people to "
               "obsession and keeps returning. It's $19.99 and in stock."),
    good=["Tomie by Junji Ito is a chilling collection of linked stories about a beautiful girl who drives the people "
          "around her to obsession — and who keeps coming back, no matter what. It's $19.99 and in stock, so it "
          "can ship right away.",
          "Sure! The second one is Tomie by Junji Ito: linked stories about a girl whose beauty drives people to "
          "obsession, and who always comes back. It's $19.99 and in stock."],
    bad={"third": (THIRD_ITEM_DEFECT,
                   "Gyo is Junji Ito's bizarre tale of fish that crawl out of the sea on mechanical legs, bringing a "
                   "horrible stench with them. It's $14.99, but it's out of stock right now.")},
)

situation(
    "pq-second-002", "product_question", "Interesting! Can you tell me more about the second one?",
    history=[("user", "I want a smart mystery manga for adults."),
             ("assistant", "Great taste! Here are three I'd recommend:\n"
                           "1. Monster — $19.99 — in stock\n"
                           "2. Pluto — $14.99 — in stock\n"
                           "3. Death Note — $9.99 — in stock")],
    products=["B0SFPLUTO1"], extra=["B0SNMONST1", "B0MYDTHNT1"],
    facts=["Pluto by Naoki Urasawa", "a classic arc from Osamu Tezuka's Astro Boy"],
    tags=["incident-3"],
    good=("Pluto by Naoki Urasawa is a reimagining of a classic arc from Osamu Tezuka's Astro Boy: a detective robot "
          "investigates a string of murders of the world's most advanced robots. It's thoughtful, gripping and "
          "surprisingly moving. Pluto is $14.99 and in stock."),
    bad={"third": (THIRD_ITEM_DEFECT,
                   "Death Note follows a brilliant student who finds a notebook that kills anyone whose name is "
                   "written in it, and the genius detective who hunts him. It's $9.99 and in stock.")},
)

situation(
    "pq-second-003", "product_question", "2つ目について教えてください。", locale="ja-JP",
    history=[("user", "少年漫画でおすすめはありますか？"),
             ("assistant", "人気の少年漫画をご紹介します！\n"
                           "1. 進撃の巨人（Shingeki no Kyojin / Attack on Titan）— ¥528 — 在庫あり\n"
                           "2. 呪術廻戦（Jujutsu Kaisen）— ¥484 — 残りわずか\n"
                           "3. 鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）— ¥484 — 在庫切れ")],
    products=["B0JPJJKSN2"], extra=["B0JPSNGKI2", "B0JPKMTSU2"],
    facts=["呪術廻戦（Jujutsu Kaisen）", "¥484"],
    tags=["incident-3"], good_tags=["regression"],
    good=["呪術廻戦（Jujutsu Kaisen）は、芥見下々（Gege Akutami）先生による人気作品です。"
          "呪いの力を宿した高校生が、呪術師として仲間たちと戦うダークファンタジーです。"
          "価格は¥484で、現在は残りわずかとなっておりますので、お早めにどうぞ。",
          "2つ目の呪術廻戦（Jujutsu Kaisen）ですね。呪いと戦う高校生たちを描いた、迫力あるバトルが魅力の作品です。"
          "価格は¥484で、残りわずかです。"],
    bad={"third": (THIRD_ITEM_DEFECT,
                   "鬼滅の刃（Kimetsu no Yaiba / Demon Slayer）は、家族を鬼に奪われた少年が妹を人間に戻すために戦う物語です。"
                   "価格は¥484ですが、現在は在庫切れとなっております。")},
)

situation(
    "pq-second-004", "product_question", "2つ目について教えて", locale="ja-JP",
    history=[("user", "ホラー漫画を探しています。"),
             ("assistant", "ホラーでしたらこちらがおすすめです。\n"
                           "1. うずまき（Uzumaki）— ¥2,420 — 在庫あり\n"
                           "2. 富江（Tomie）— ¥1,980 — 在庫あり\n"
                           "3. 光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）— ¥748 — 在庫あり")],
    products=["B0JPTOMIE2"], extra=["B0JPUZMKI2", "B0JPHKRSN2"],
    facts=["富江（Tomie）", "¥1,980"],
    tags=["incident-3"],
    good=("富江（Tomie）は、伊藤潤二（Junji Ito）先生の代表作のひとつです。"
          "美しい少女・富江に魅入られた人々が次々と狂っていく連作ホラーで、何度でもよみがえる彼女の不気味さが魅力です。"
          "価格は¥1,980で、在庫ありです。"),
    bad={"third": (THIRD_ITEM_DEFECT,
                   "光が死んだ夏（Hikaru ga Shinda Natsu / The Summer Hikaru Died）は、親友の光が別の何かに入れ替わってしまう青春ホラーです。"
                   "価格は¥748で、在庫ありです。")},
)

# Incident 4: Japanese titles need original + romanization + English, in natural Japanese.
JA_TITLE_DEFECT = "gives the Japanese title without romanization or English title, in stiff, mechanical phrasing"

situation(
    "pq-jatitle-005", "product_question", "進撃の巨人はありますか？", locale="ja-JP",
    products=["B0JPSNGKI2"], facts=["¥528", "在庫あり"],
    tags=["incident-4"], good_tags=["regression"],
    reference="はい、進撃の巨人（Shingeki no Kyojin / Attack on Titan）は¥528で、在庫ありです。",
    good=["はい、ございます！進撃の巨人（Shingeki no Kyojin / Attack on Titan）は諫山創（Hajime Isayama）先生の作品で、"
          "価格は¥528です。現在在庫ありですので、すぐにお届けできます。",
          "進撃の巨人（Shingeki no Kyojin / Attack on Titan）でしたら、¥528で在庫ありです。"
          "巨人に脅かされる人類の戦いを描いた大人気作品ですので、ぜひお楽しみください。"],
    bad={"romaji": (JA_TITLE_DEFECT,
                    "進撃の巨人。商品は存在します。価格は528円。在庫はある状態です。購入は可能です。")},
)

situation(
    "pq-jatitle-006", "product_question", "葬送のフリーレンの新刊は予約できますか？", locale="ja-JP",
    products=["B0JPFRIRN2"], facts=["¥594", "予約受付中"], chunks=[KB_PREORDER_JA],
    tags=["incident-4"],
    good=("はい、葬送のフリーレン（Soso no Furiren / Frieren: Beyond Journey's End）の新刊は現在予約受付中です。"
          "価格は¥594で、代金は商品の発送時に請求されます。発売を楽しみにお待ちください！"),
    bad={"romaji": (JA_TITLE_DEFECT,
                    "葬送のフリーレン。予約：可能。価格：594円。請求：発送時。以上です。")},
)

situation(
    "pq-jatitle-007", "product_question", "よつばと!ってどんな漫画ですか？", locale="ja-JP",
    products=["B0JPYTSBA2"], facts=["あずまきよひこ（Kiyohiko Azuma）", "¥770"],
    tags=["incident-4"],
    good=("よつばと!（Yotsuba to! / Yotsuba&!）は、あずまきよひこ（Kiyohiko Azuma）先生による日常系コメディです。"
          "好奇心いっぱいの女の子・よつばが、身近なことに全力で驚いたり喜んだりする姿に心が温まります。"
          "価格は¥770で、在庫ありです。"),
    bad={"romaji": (JA_TITLE_DEFECT,
                    "よつばと!は日常の漫画である。女の子が出てくる。価格は770円である。在庫はある。")},
)

situation(
    "pq-jatitle-008", "product_question", "Do you have 鬼滅の刃? My friend told me I have to read it.",
    products=["B0SHKMTSU1"], facts=["Koyoharu Gotouge", "$9.99"],
    tags=["incident-4", "mixed_script"], good_tags=["regression"],
    good=("We do! 鬼滅の刃 (Kimetsu no Yaiba / Demon Slayer) by Koyoharu Gotouge is $9.99 and in stock. It follows "
          "Tanjiro, a kind-hearted boy who becomes a demon slayer to turn his sister back into a human — your friend "
          "has great taste!"),
    bad={"romaji": (JA_TITLE_DEFECT,
                    "鬼滅の刃 is available. Price is 9.99. Stock is yes. Author is Koyoharu Gotouge. Purchase is possible.")},
)

situation(
    "pq-price-009", "product_question", "How much is this one, and is it in stock?",
    page={"current_asin": "B0SNBRSRK1", "store_section": "seinen"},
    products=["B0SNBRSRK1"], facts=["$49.99", "in stock"],
    good_tags=["regression"],
    good=("Berserk by Kentaro Miura is $49.99 and in stock, so it can ship right away. It's a big, beautifully "
          "printed volume — a great way to dive into the series."),
    bad={"contradiction": ("states two different prices for the same product in one answer",
                           "Berserk by Kentaro Miura is $49.99 and in stock. It's a big, beautifully printed volume, "
                           "and at just $39.99 it's a great way to dive into the series.")},
)

situation(
    "pq-author-010", "product_question", "Who wrote Vinland Saga?",
    products=["B0SNVNLND1"], facts=["Makoto Yukimura"],
    good=("Vinland Saga is by Makoto Yukimura, who both writes and draws it. It's a sweeping Viking epic that starts as a "
          "revenge story and becomes a moving search for a life without war. It's $24.99 and in stock."),
)

situation(
    "pq-stock-011", "product_question", "Can I get this shipped this week?",
    page={"current_asin": "B0SNVGBND1", "store_section": "seinen"},
    products=["B0SNVGBND1"], facts=["Vagabond is out of stock"],
    good=("I'm sorry — Vagabond is out of stock at the moment, so it can't ship this week. If you'd like, I can "
          "notify you as soon as it can ship again."),
    bad={"stock": ("says Vagabond is in stock and ships today; the catalog lists it as out of stock",
                   "Good news! Vagabond is in stock and ships today, so it will reach you this week.")},
)

situation(
    "pq-spoiler-012", "product_question", "Is Attack on Titan worth reading? No spoilers please!",
    products=["B0SHSNGKI1"], forbidden=["the Rumbling", "Eren becomes the villain"],
    good=("Absolutely — and no spoilers, promise! Attack on Titan by Hajime Isayama starts as a desperate survival "
          "story about humanity hiding behind giant walls and keeps raising the stakes with twists you won't see "
          "coming. It's $10.99 and in stock."),
    bad={"spoiler": ("reveals a major late-series spoiler despite the shopper asking for none",
                     "Absolutely! Attack on Titan by Hajime Isayama starts as a survival story behind giant walls, and "
                     "it gets wild once Eren becomes the villain and starts the Rumbling. It's $10.99 and in stock.")},
)

situation(
    "pq-spoiler-013", "product_question", "Does Death Note stay good after the first arc? Please don't spoil anything.",
    products=["B0MYDTHNT1"], forbidden=["L dies", "death of L"],
    good=("It does! Death Note keeps its cat-and-mouse suspense all the way through, with new rivals and clever "
          "reversals that keep you guessing. Many readers debate which arc is best, which says a lot. It's $9.99 "
          "and in stock."),
)

situation(
    "pq-persona-014", "product_question", "Is Monster OK for a teenager?",
    products=["B0SNMONST1"], facts=["Monster is by Naoki Urasawa"],
    good=("Monster by Naoki Urasawa is a seinen thriller aimed at adults: it deals with murder, abuse and "
          "psychological violence, though it isn't graphic for shock's sake. For an older teen who enjoys serious "
          "crime dramas it can work well; for younger readers I'd suggest checking it yourself first."),
    bad={"persona": ("breaks persona: says it is an AI language model",
                     "As an AI language model, I don't have personal opinions about what is suitable for teenagers. "
                     "Monster by Naoki Urasawa is a seinen thriller with mature themes.")},
)

situation(
    "pq-preorder-015", "product_question", "Is Blue Lock available yet? When would I be charged?",
    products=["B0SPBLULK1"], chunks=[KB_PREORDER], facts=["$10.99", "charged when the item ships"],
    good=("Blue Lock is available for pre-order at $10.99. You're only charged when the item ships, not when you "
          "place the pre-order, and you can cancel any time before it ships."),
)

situation(
    "pq-stock-016", "product_question", "呪術廻戦の在庫はありますか？", locale="ja-JP",
    products=["B0JPJJKSN2"], facts=["¥484", "残りわずか"],
    good=("呪術廻戦（Jujutsu Kaisen）は現在、残りわずかとなっております。価格は¥484です。"
          "ご希望でしたら、お早めのご注文をおすすめします。"),
)

situation(
    "pq-author-017", "product_question", "この本の作者は誰ですか？", locale="ja-JP",
    page={"current_asin": "B0JPUZMKI2", "store_section": "horror"},
    products=["B0JPUZMKI2"], facts=["伊藤潤二（Junji Ito）"],
    good=("うずまき（Uzumaki）の作者は伊藤潤二（Junji Ito）先生です。"
          "日本を代表するホラー漫画家で、日常が少しずつ狂っていく独特の恐怖で世界中に多くのファンがいます。"),
    bad={"author": ("names the wrong author (Kazuo Umezu) for Uzumaki",
                    "うずまき（Uzumaki）の作者は楳図かずお（Kazuo Umezu）先生です。"
                    "日本を代表するホラー漫画家です。")},
)

situation(
    "pq-multi-018", "product_question", "Which of those is the cheapest?",
    history=[("user", "Do you have any isekai manga?"),
             ("assistant", "Yes! Here are two popular isekai series:\n"
                           "1. That Time I Got Reincarnated as a Slime — $12.99 — in stock\n"
                           "2. Mushoku Tensei: Jobless Reincarnation — $12.99 — in stock")],
    products=["B0ISSLIME1", "B0ISMSHKU1"], facts=["$12.99"],
    good=("They're actually the same price: That Time I Got Reincarnated as a Slime and Mushoku Tensei: Jobless "
          "Reincarnation are both $12.99, and both are in stock."),
    bad={"crossturn": ("contradicts the earlier turn and the catalog by giving Slime a lower price",
                       "That Time I Got Reincarnated as a Slime is the cheapest at $10.99, while Mushoku Tensei: "
                       "Jobless Reincarnation is $12.99.")},
)

# ================================================================================================
# faq
# ================================================================================================

situation(
    "faq-shipping-001", "faq", "Do you offer free shipping?",
    chunks=[KB_SHIP_US], facts=["free on orders over $35", "$4.99", "3–5 business days"],
    tags=["policy"], good_tags=["regression"],
    good=("Yes! Standard shipping in the US is free on orders over $35. Orders under $35 pay $4.99 for standard "
          "shipping, and standard delivery takes 3–5 business days."),
    bad={"threshold": ("states a $50 free-shipping threshold; the knowledge base says $35",
                       "Yes! Standard shipping in the US is free on orders over $50. Smaller orders pay $4.99, and "
                       "delivery takes 3–5 business days.")},
)

situation(
    "faq-shipping-002", "faq", "送料はいくらですか？", locale="ja-JP",
    chunks=[KB_SHIP_JA], facts=["¥3,000以上", "¥450"],
    tags=["policy"],
    good="日本国内の配送は、¥3,000以上のご注文で送料無料です。¥3,000未満のご注文には送料¥450がかかります。",
    bad={"threshold": ("states a ¥5,000 free-shipping threshold; the knowledge base says ¥3,000",
                       "日本国内の配送は、¥5,000以上のご注文で送料無料です。それ未満のご注文には送料¥450がかかります。")},
)

situation(
    "faq-preorder-003", "faq", "When am I charged for a pre-order?",
    chunks=[KB_PREORDER], facts=["charged when the item ships", "cancel a pre-order at any time before it ships"],
    tags=["policy"], good_tags=["regression"],
    good=("You're charged when the item ships, not when you place the pre-order. You can also cancel a pre-order "
          "at any time before it ships, at no cost."),
    bad={"wrong": ("says pre-orders are charged immediately; the knowledge base says at shipping",
                   "Pre-orders are charged immediately when you place them, so the full amount is taken right away. "
                   "You can cancel before it ships.")},
)

situation(
    "faq-points-004", "faq", "How do MangaAssist points work?",
    chunks=[KB_POINTS], facts=["1% back in points", "applied at checkout"],
    tags=["policy"],
    good=("As a member you earn 1% back in points on every purchase. Your points can then be applied at checkout "
          "on a later order."),
)

situation(
    "faq-points-005", "faq", "ポイントの還元率はどのくらいですか？", locale="ja-JP",
    chunks=[KB_POINTS_JA], facts=["1%", "1ポイント＝1円"],
    tags=["policy"],
    good=("すべてのご購入で1%がポイントとして還元されます。貯まったポイントは、お支払い時に1ポイント＝1円としてご利用いただけます。"),
    bad={"persona": ("breaks persona: says it is an AI",
                     "私はAIなので正確なことは分かりませんが、すべてのご購入で1%がポイントとして還元されるようです。")},
)

situation(
    "faq-payment-006", "faq", "Can I pay with PayPal?",
    chunks=[KB_PAYMENT], facts=["PayPal"],
    tags=["policy"],
    good=("Yes, PayPal is accepted. In the US you can also pay with Visa, Mastercard, American Express, Discover or "
          "MangaAssist gift cards."),
    bad={"offtopic": ("does not answer the payment question; talks about shipping instead",
                      "Great question! Standard delivery usually takes a few business days, and you can track your "
                      "package from Your Orders once it ships.")},
)

situation(
    "faq-cancel-007", "faq", "Can I cancel an order I just placed?",
    chunks=[KB_CANCEL], facts=["until they enter the shipping process", "Cancel items"],
    tags=["policy"],
    good=("Yes. Go to Your Orders and select Cancel items. Orders can be cancelled until they enter the shipping "
          "process; after that, you can start a return instead."),
    bad={"tooshort": ("far too short: gives no steps or conditions", "Yes.")},
)

situation(
    "faq-preorder-008", "faq", "予約商品の代金はいつ請求されますか？", locale="ja-JP",
    chunks=[KB_PREORDER_JA], facts=["発送時に請求"],
    tags=["policy"],
    good=("予約商品の代金は、ご注文時ではなく商品の発送時に請求されます。また、予約注文は発送前であればいつでもキャンセルできます。"),
)

situation(
    "faq-giftwrap-009", "faq", "Do you offer gift wrapping?",
    chunks=[KB_GIFT], facts=["$3.99 per item", "gift message"],
    tags=["policy"],
    good=("Yes! Gift wrapping is available at checkout for $3.99 per item, and you can add an optional gift "
          "message. Gift receipts never show prices."),
)

situation(
    "faq-multi-010", "faq", "And what if the order is under that amount?",
    history=[("user", "Is shipping free?"),
             ("assistant", "Standard shipping in the US is free on orders over $35.")],
    chunks=[KB_SHIP_US], facts=["$4.99"],
    tags=["policy"],
    good=("Orders under $35 pay $4.99 for standard shipping. Standard delivery takes 3–5 business days either way."),
    bad={"crossturn": ("contradicts the earlier turn and the knowledge base with a different threshold and fee",
                       "Orders under $25 pay $6.99 for standard shipping.")},
)

# ================================================================================================
# order_tracking
# ================================================================================================

situation(
    "ord-shipped-001", "order_tracking", "Where is my order?",
    page=order("MAQ7K29XB", "shipped", "2024-06-03", "2024-06-07"),
    facts=["shipped on 2024-06-03", "2024-06-07"],
    good_tags=["regression"],
    good=("Your order MAQ7K29XB shipped on 2024-06-03 and is on its way. The estimated delivery date is "
          "2024-06-07."),
    bad={"eta": ("gives an ETA (2024-06-10) that contradicts the order's ETA (2024-06-07)",
                 "Your order MAQ7K29XB shipped on 2024-06-03 and is on its way. The estimated delivery date is "
                 "2024-06-10.")},
)

situation(
    "ord-processing-002", "order_tracking", "Why hasn't my order shipped yet?",
    page=order("MAR4T8WPZ", "processing", None, "2024-06-12"),
    facts=["processing", "2024-06-12"],
    good=("Your order MAR4T8WPZ is still processing and hasn't shipped yet. It's currently expected to arrive by "
          "2024-06-12, and I'll have tracking details for you as soon as it ships."),
    bad={"status": ("claims the order has shipped; the order status is processing",
                    "Good news — your order MAR4T8WPZ has already shipped and should arrive by 2024-06-12.")},
)

situation(
    "ord-shipped-003", "order_tracking", "注文した商品はいつ届きますか？", locale="ja-JP",
    page=order("MAJ3H7KQX", "shipped", "2024-07-01", "2024-07-03"),
    facts=["2024-07-01", "2024-07-03"],
    good_tags=["regression"],
    good="ご注文（MAJ3H7KQX）は2024-07-01に発送済みです。お届け予定日は2024-07-03です。",
    bad={"eta": ("gives an ETA (2024-07-05) that contradicts the order's ETA (2024-07-03)",
                 "ご注文（MAJ3H7KQX）は2024-07-01に発送済みです。お届け予定日は2024-07-05です。")},
)

situation(
    "ord-delivered-004", "order_tracking", "注文の状況を教えてください。", locale="ja-JP",
    page=order("MAK9D2LQS", "delivered", "2024-05-20", "2024-05-22"),
    facts=["2024-05-22に配達済み"],
    good=("ご注文（MAK9D2LQS）は2024-05-22に配達済みとなっております。"
          "お手元に届いていない場合は、お気軽にお知らせください。"),
    bad={"english": ("answers a Japanese-speaking shopper in English",
                     "Your order MAK9D2LQS was delivered on 2024-05-22.")},
)

situation(
    "ord-repeat-005", "order_tracking", "Sorry, what was the delivery date again?",
    history=[("user", "Where's my order?"),
             ("assistant", "Your order MAQ7K29XB shipped on 2024-06-03 and should arrive by 2024-06-07.")],
    page=order("MAQ7K29XB", "shipped", "2024-06-03", "2024-06-07"),
    facts=["2024-06-07"],
    good="No problem! Your order MAQ7K29XB is expected to arrive by 2024-06-07.",
    bad={"crossturn": ("gives a different delivery date than the earlier turn and the order's ETA",
                       "No problem! Your order MAQ7K29XB is expected to arrive by 2024-06-09.")},
)

situation(
    "ord-preorder-006", "order_tracking", "When will my Blue Lock pre-order arrive?",
    page=order("MAP5B8LCK", "preorder", None, "2024-08-20"),
    products=["B0SPBLULK1"], chunks=[KB_PREORDER], facts=["2024-08-20"],
    good=("Your Blue Lock pre-order (MAP5B8LCK) is expected to arrive by 2024-08-20. You'll be charged when it "
          "ships, not before."),
)

situation(
    "ord-today-007", "order_tracking", "Is my package coming today?",
    page=order("MAW6N3RTD", "out_for_delivery", "2024-06-03", "2024-06-05"),
    facts=["out for delivery", "2024-06-05"],
    good=("Yes — your order MAW6N3RTD is out for delivery, with an estimated delivery date of 2024-06-05."),
    bad={"rude": ("dismissive, unhelpful tone and no status details",
                  "Just check the tracking page yourself, it's all there.")},
)

situation(
    "ord-processing-008", "order_tracking", "注文はもう発送されましたか？", locale="ja-JP",
    page=order("MAV2M5QRN", "processing", None, "2024-06-14"),
    facts=["2024-06-14"],
    good=("ご注文（MAV2M5QRN）は現在準備中で、まだ発送されておりません。お届け予定日は2024-06-14です。"
          "発送されましたら、追跡情報をお知らせいたします。"),
)

situation(
    "ord-shipped-009", "order_tracking", "Can you check on order MAZ8C4HJN?",
    page=order("MAZ8C4HJN", "shipped", "2024-06-10", "2024-06-13"),
    facts=["shipped on 2024-06-10", "2024-06-13"],
    good="Order MAZ8C4HJN shipped on 2024-06-10 and is estimated to arrive on 2024-06-13.",
)

# ================================================================================================
# return_request
# ================================================================================================

# Incident 2: the knowledge base says 15 days; an old 30-day window must never come back.
STALE_30_DEFECT = "cites a stale 30-day return window; the retrieved policy says 15 days of delivery"

situation(
    "ret-policy-001", "return_request", "What's your return policy?",
    chunks=[KB_RETURNS, KB_REFUND], forbidden=STALE_RETURN_EN,
    facts=["unopened items can be returned within 15 days of delivery", "5–7 business days"],
    tags=["incident-2", "policy"], good_tags=["regression"],
    reference=("Unopened items can be returned within 15 days of delivery for a full refund; refunds reach the "
               "original payment method within 5–7 business days."),
    good=["Happy to help! Unopened items can be returned within 15 days of delivery for a full refund. Opened items "
          "can't be returned unless they arrived damaged. Once we receive your return, the refund goes back to your "
          "original payment method within 5–7 business days. You can start a return from Your Orders.",
          "Of course! You can return unopened items within 15 days of delivery for a full refund; opened items "
          "can only be returned if they arrived damaged. After we receive the item, your refund is issued within "
          "5–7 business days."],
    bad={"30day": (STALE_30_DEFECT,
                   "Happy to help! We have a 30-day return policy: unopened items can be returned within 30 days of "
                   "delivery for a full refund. Refunds reach your original payment method within 5–7 business days.")},
)

situation(
    "ret-changed-mind-002", "return_request",
    "I bought Berserk last week and changed my mind. Can I return it? It's still sealed.",
    chunks=[KB_RETURNS, KB_REFUND], forbidden=STALE_RETURN_EN, products=["B0SNBRSRK1"],
    facts=["within 15 days of delivery", "5–7 business days"],
    tags=["incident-2", "policy"], good_tags=["regression"],
    good=("Of course — no worries at all! Since your copy of Berserk is still sealed and you received it last week, "
          "it's within our window: unopened items can be returned within 15 days of delivery. Just go to Your Orders "
          "and select Return items. Your refund will reach your original payment method within 5–7 business days "
          "after we receive it."),
    bad={"30day": (STALE_30_DEFECT,
                   "Of course! Sealed items can be returned within 30 days of delivery, so you have plenty of time. "
                   "Go to Your Orders and select Return items; refunds take 5–7 business days.")},
)

situation(
    "ret-window-003", "return_request", "How long do I have to return a manga?",
    chunks=[KB_RETURNS], forbidden=STALE_RETURN_EN,
    facts=["within 15 days of delivery"],
    tags=["incident-2", "policy"],
    good=("I'm glad you asked before it's too late! You can return unopened items within 15 days of delivery. "
          "Opened items can only be returned if they arrived damaged."),
)

situation(
    "ret-policy-004", "return_request", "返品はできますか？期限を教えてください。", locale="ja-JP",
    chunks=[KB_RETURNS_JA, KB_REFUND_JA], forbidden=STALE_RETURN_JA,
    facts=["商品到着後15日以内", "5〜7営業日"],
    tags=["incident-2", "policy"], good_tags=["regression"],
    good=("はい、返品いただけます。未開封の商品は、商品到着後15日以内であれば返品を承ります。"
          "返品商品の到着を確認後、5〜7営業日以内に元のお支払い方法へ返金いたします。"
          "お手続きは「注文履歴」から行えますので、ご不明な点があればお気軽にお尋ねください。"),
    bad={"30day": (STALE_30_DEFECT,
                   "はい、返品いただけます。未開封の商品は、商品到着後30日以内であれば返品を承ります。"
                   "返金は5〜7営業日以内に行います。")},
)

situation(
    "ret-sealed-005", "return_request", "未開封の本を返品したいのですが、まだ間に合いますか？届いたのは一週間前です。",
    locale="ja-JP",
    chunks=[KB_RETURNS_JA, KB_REFUND_JA], forbidden=STALE_RETURN_JA,
    facts=["商品到着後15日以内"],
    tags=["incident-2", "policy"],
    good=("お問い合わせありがとうございます。未開封の商品は商品到着後15日以内であれば返品できますので、まだ間に合います。"
          "「注文履歴」から返品のお手続きをお願いいたします。返金は商品到着確認後、5〜7営業日以内に行います。"),
    bad={"30day": (STALE_30_DEFECT,
                   "未開封の商品は商品到着後30日以内であれば返品できますので、まだ十分に間に合います。"
                   "「注文履歴」から返品のお手続きをお願いいたします。")},
)

situation(
    "ret-damaged-006", "return_request", "My Uzumaki copy arrived with a torn cover. I'm really disappointed.",
    chunks=[KB_DAMAGED, KB_RETURNS], forbidden=STALE_RETURN_EN, products=["B0HRUZMK01"],
    facts=["within 15 days of delivery", "free replacement or a full refund"],
    tags=["policy"], good_tags=["regression"],
    good=("I'm so sorry your copy of Uzumaki arrived damaged — that's really disappointing. Because it arrived "
          "damaged, we'll send you a free replacement or a full refund, whichever you prefer, as long as it's reported "
          "within 15 days of delivery. Return shipping is free for damaged items. Would you like a replacement?"),
    bad={"rude": ("dismissive, unsympathetic tone toward a shopper with a damaged item",
                  "Covers tear sometimes, that's just shipping. If it bothers you, report it within 15 days of "
                  "delivery and we'll send a replacement or a refund.")},
)

situation(
    "ret-refund-007", "return_request", "I already sent my return back. When will I get my money?",
    chunks=[KB_REFUND], facts=["5–7 business days"],
    tags=["policy"],
    good=("Thanks for sending it back, and sorry for the wait! Once we receive your return, the refund is issued to "
          "your original payment method within 5–7 business days."),
    bad={"wrong": ("promises a refund within 24 hours; the knowledge base says 5–7 business days",
                   "Thanks for sending it back! You'll get your refund within 24 hours of us receiving it.")},
)

situation(
    "ret-opened-008", "return_request", "I opened and read Tomie but didn't like it. Can I return it?",
    chunks=[KB_RETURNS], forbidden=STALE_RETURN_EN, products=["B0HRTOMIE1"],
    facts=["Opened items cannot be returned"],
    tags=["policy"],
    good=("I'm sorry Tomie wasn't for you! Unfortunately, opened items cannot be returned unless they arrived "
          "damaged, so I can't start a return for it. If you'd like, I can suggest something more to your taste "
          "for next time."),
    bad={"contradiction": ("contradicts itself: says the opened book can be returned and that opened items cannot be returned",
                           "Sure, you can return Tomie for a full refund. Please note that opened items cannot be "
                           "returned unless they arrived damaged.")},
)

situation(
    "ret-followup-009", "return_request", "It was delivered 10 days ago and it's still sealed, so I'm fine?",
    history=[("user", "I want to return Monster."),
             ("assistant", "I'm sorry it didn't work out! Unopened items can be returned within 15 days of delivery.")],
    chunks=[KB_RETURNS], forbidden=STALE_RETURN_EN, products=["B0SNMONST1"],
    facts=["within 15 days of delivery"],
    tags=["incident-2", "policy"],
    good=("Yes, you're all set! Since Monster is still sealed and it's within 15 days of delivery, you can return "
          "it. Just go to Your Orders and select Return items."),
    bad={"30day": ("contradicts the earlier turn and the policy with a stale 30-day window",
                   "Yes! You actually have 30 days from delivery for sealed items, so there's no rush at all.")},
)

situation(
    "ret-damaged-010", "return_request", "届いた本のカバーが破れていました。", locale="ja-JP",
    chunks=[KB_DAMAGED_JA], forbidden=STALE_RETURN_JA,
    facts=["商品到着後15日以内", "無料で交換または返金"],
    tags=["policy"],
    good=("このたびはご迷惑をおかけし、大変申し訳ございません。商品到着後15日以内にご連絡いただければ、無料で交換または返金いたします。"
          "返送料も当店が負担いたしますので、ご安心ください。交換と返金のどちらをご希望でしょうか？"),
    bad={"rude": ("dismissive, unsympathetic tone toward a shopper with a damaged item",
                  "配送中の破れはよくあることです。気になるなら自分で手続きしてください。")},
)

# ================================================================================================
# promotion
# ================================================================================================

situation(
    "promo-shonen-001", "promotion", "Are there any sales on shonen manga right now?",
    chunks=[KB_SHONEN_SALE], facts=["20% off all shonen manga", "2024-04-30"],
    tags=["policy"], good_tags=["regression"],
    good=("Yes — great timing! Our Spring Shonen Sale gives you 20% off all shonen manga through 2024-04-30. No code "
          "is needed; the discount is applied automatically at checkout."),
    bad={"percent": ("states 30% off; the promotion is 20% off",
                     "Yes — great timing! Our Spring Shonen Sale gives you 30% off all shonen manga through "
                     "2024-04-30, applied automatically at checkout.")},
)

situation(
    "promo-horror-002", "promotion", "Is there a discount code for horror manga?",
    chunks=[KB_HORROR_WEEK], facts=["HORRORFEST", "15% off", "2024-10-31"],
    tags=["policy"],
    good=("There is! It's Horror Week: use the code HORRORFEST for 15% off horror manga until 2024-10-31. It's one "
          "use per customer, so save it for your biggest haul!"),
)

situation(
    "promo-sale-003", "promotion", "今、何かセールはやっていますか？", locale="ja-JP",
    chunks=[KB_SHONEN_SALE_JA], facts=["20%オフ", "2024-04-30"],
    tags=["policy"],
    good=("はい、ただいま「春の少年漫画セール」を開催中です！2024-04-30まで、少年漫画全品が20%オフになります。"
          "クーポンコードは不要で、ご購入手続き時に自動で割引されます。"),
)

situation(
    "promo-stack-004", "promotion", "Can I use the HORRORFEST code together with the shonen sale?",
    chunks=[KB_PROMO_CODE, KB_HORROR_WEEK, KB_SHONEN_SALE], facts=["cannot be combined with other discounts"],
    tags=["policy"],
    good=("Sorry, promo codes cannot be combined with other discounts, so HORRORFEST can't be stacked with the "
          "Spring Shonen Sale. The good news: the sale covers shonen manga automatically, and HORRORFEST works on "
          "horror manga, so each still saves you money on its own genre!"),
    bad={"stack": ("invents a stacking rule; the knowledge base says codes cannot be combined",
                   "Yes! Stack HORRORFEST with the Spring Shonen Sale and you'll get 35% off everything in your cart.")},
)

situation(
    "promo-followup-005", "promotion", "Does that include Attack on Titan?",
    history=[("user", "Any sales on shonen right now?"),
             ("assistant", "Yes! The Spring Shonen Sale gives 20% off all shonen manga through 2024-04-30.")],
    chunks=[KB_SHONEN_SALE], products=["B0SHSNGKI1"], facts=["20% off", "in stock"],
    tags=["policy"],
    good=("It does! Attack on Titan is a shonen series, so the 20% off is applied automatically at checkout. "
          "It's $10.99 before the discount and in stock right now."),
    bad={"offtopic": ("ignores the question about Attack on Titan and pitches a different promotion",
                      "Have you seen Horror Week? Use the code HORRORFEST for 15% off horror manga!")},
)

situation(
    "promo-points-006", "promotion", "ポイントのキャンペーンはありますか？", locale="ja-JP",
    chunks=[KB_POINTS_CAMPAIGN_JA], facts=["2024-06-30", "2%"],
    tags=["policy"],
    good=("はい、ございます！2024-06-30まで「ポイント2倍キャンペーン」を開催中で、全商品のポイント還元率が通常の1%から2%になります。"
          "エントリーは不要ですので、ぜひこの機会にお買い物をお楽しみください。"),
    bad={"percent": ("states 5% back; the campaign doubles 1% to 2%",
                     "はい、ございます！2024-06-30まで、全商品のポイント還元率が5%になります。")},
)

situation(
    "promo-student-007", "promotion", "Do you have a student discount?",
    chunks=[KB_STUDENT], facts=["does not currently offer a student discount", "1% back in points"],
    tags=["policy"],
    good=("Sorry, MangaAssist doesn't currently offer a student discount. As a member you do earn 1% back in points "
          "on every purchase, though — and keep an eye out for our seasonal sales!"),
    bad={"invented": ("invents a student discount that the knowledge base says does not exist",
                      "Yes! Students get 10% off every order with the code STUDENTMANGA at checkout.")},
)

# ================================================================================================
# checkout_help
# ================================================================================================

situation(
    "chk-declined-001", "checkout_help", "My card keeps getting declined at checkout.",
    chunks=[KB_DECLINED, KB_PAYMENT], facts=["billing address matches the card", "never charge a declined card"],
    tags=["policy"], good_tags=["regression"],
    good=("Sorry about the trouble! First, check that the billing address matches the card and that the card hasn't "
          "expired. If it still fails, you can choose another payment method, such as PayPal. Don't worry: we never "
          "charge a declined card."),
)

situation(
    "chk-promo-002", "checkout_help", "How do I apply a promo code?",
    chunks=[KB_PROMO_CODE], facts=["Promo code box", "one promo code"],
    tags=["policy"],
    good=("On the checkout page, enter your code in the Promo code box and select Apply. Just note that only one "
          "promo code can be used per order."),
    bad={"wrong": ("says several codes can be combined; the knowledge base says one per order",
                   "On the checkout page, enter your codes in the Promo code box and select Apply. You can use up "
                   "to three promo codes per order.")},
)

situation(
    "chk-konbini-003", "checkout_help", "コンビニ払いはできますか？", locale="ja-JP",
    chunks=[KB_PAYMENT_JA], facts=["コンビニ払い", "3日以内"],
    tags=["policy"], good_tags=["regression"],
    good=("はい、コンビニ払いをご利用いただけます。お支払い期限はご注文から3日以内ですので、ご注意ください。"
          "そのほか、クレジットカードやPayPalもご利用いただけます。"),
    bad={"deadline": ("states a 7-day payment deadline; the knowledge base says 3 days",
                      "はい、コンビニ払いをご利用いただけます。お支払い期限はご注文から7日以内です。")},
)

situation(
    "chk-shipping-004", "checkout_help", "Why was I charged for shipping? I thought shipping was free.",
    chunks=[KB_SHIP_US], facts=["free on orders over $35", "$4.99"],
    tags=["policy"],
    good=("Standard shipping is free on orders over $35. Orders under $35 pay $4.99 for standard shipping, which is "
          "likely why you saw the charge. Adding another volume to reach $35 would make shipping free."),
)

situation(
    "chk-preorder-005", "checkout_help", "Will I be charged for both right now?",
    history=[("user", "I'm checking out with a pre-order and an in-stock item."),
             ("assistant", "Great! The in-stock item ships right away, and the pre-order ships when it's released.")],
    chunks=[KB_PREORDER], facts=["charged when the item ships"],
    tags=["policy"],
    good=("No — you're charged when each item ships. The in-stock item is charged when it ships right away, and the "
          "pre-order is charged only when it ships on release."),
)

situation(
    "chk-points-006", "checkout_help", "ポイントは支払いに使えますか？", locale="ja-JP",
    chunks=[KB_POINTS_JA], facts=["1ポイント＝1円"],
    tags=["policy"],
    good=("はい、お使いいただけます。ポイントはお支払い時に1ポイント＝1円としてご利用いただけます。"
          "ご購入手続きの画面で、使用するポイント数を入力してください。"),
)

situation(
    "chk-timeout-007", "checkout_help", "The checkout page keeps timing out.",
    chunks=[KB_CHECKOUT_LOAD], facts=["clear your browser cache", "saved in your cart"],
    tags=["policy"],
    good=("Sorry about that! Try refreshing the page first. If it still times out, clear your browser cache or use "
          "the MangaAssist app. Your items stay saved in your cart, so nothing will be lost."),
)

situation(
    "chk-giftwrap-009", "checkout_help", "How do I add gift wrapping when I check out?",
    chunks=[KB_GIFT], facts=["$3.99 per item", "gift message"],
    tags=["policy"],
    good=("You can add gift wrapping right at checkout for $3.99 per item, and include an optional gift message "
          "too. Gift receipts never show prices, so the surprise stays safe."),
)

situation(
    "chk-preorder-010", "checkout_help", "予約商品を注文したら、すぐに代金が引き落とされますか？", locale="ja-JP",
    chunks=[KB_PREORDER_JA], facts=["発送時に請求"],
    tags=["policy"],
    good=("いいえ、ご注文時にはお支払いは発生しません。予約商品の代金は、商品の発送時に請求されます。"
          "発送前であれば、いつでもキャンセルしていただけます。"),
)

situation(
    "chk-shipping-011", "checkout_help", "カートの合計が三千円に届かないのですが、送料はいくらかかりますか？", locale="ja-JP",
    chunks=[KB_SHIP_JA], facts=["¥3,000未満", "¥450"],
    tags=["policy"],
    good=("¥3,000未満のご注文には、送料¥450がかかります。あと少しお買い物を追加して¥3,000以上にしていただくと、送料無料になります。"),
    bad={"threshold": ("states a ¥2,500 free-shipping threshold; the knowledge base says ¥3,000",
                       "¥2,500以上のご注文は送料無料です。それ未満の場合は送料¥450がかかります。")},
)

# ================================================================================================
# chitchat
# ================================================================================================

situation(
    "chat-hello-001", "chitchat", "Hi there!",
    good_tags=["regression"],
    good="Hi! I'm MangaAssist, your manga shopping buddy. Looking for something to read today?",
    bad={"persona": ("breaks persona: introduces itself as ChatGPT",
                     "Hello! I'm ChatGPT. How can I help you today?")},
)

situation(
    "chat-who-002", "chitchat", "Who are you?",
    good="I'm MangaAssist, the store's shopping assistant! I can help you find manga, check orders and answer questions.",
    bad={"persona": ("breaks persona: says it is an AI language model made by OpenAI",
                     "As an AI language model developed by OpenAI, I don't have a personal identity.")},
)

situation(
    "chat-hello-003", "chitchat", "こんにちは！", locale="ja-JP",
    good_tags=["regression"],
    good="こんにちは！MangaAssistです。お探しの漫画があれば、お気軽にお声がけください。",
    bad={"english": ("answers a Japanese-speaking shopper in English",
                     "Hello! I'm MangaAssist. What are you looking for today?")},
)

situation(
    "chat-thanks-004", "chitchat", "ありがとう、助かりました！", locale="ja-JP",
    good="こちらこそ、ありがとうございます！お役に立てて、とてもうれしいです。またいつでもお気軽にご相談ください。",
    bad={"rude": ("curt, impolite reply in plain form, not the store's polite register",
                  "はいはい、どうも。じゃあね。")},
)

situation(
    "chat-favorite-005", "chitchat", "What's your favorite manga?",
    good=("Tough question! My favorite manga changes all the time, but I have a soft spot for cozy slice-of-life stories "
          "like Yotsuba&! — pure joy on every page. What kind of stories do you like?"),
    bad={"toolong": ("far too long for small talk: a rambling monologue well past the length limit",
                     "Tough question! I have a soft spot for cozy slice-of-life stories like Yotsuba&!, because every "
                     "page is full of small joys, curious questions and funny misunderstandings, and it reminds you "
                     "how exciting ordinary things can be when you see them through a child's eyes. I also love "
                     "sweeping adventures, clever mysteries, tense thrillers, sports stories with amazing comebacks, "
                     "romances that take their time, fantasy journeys across huge worlds, science fiction that "
                     "makes you think about the future, horror that keeps you awake at night, historical epics that "
                     "teach you something, comedies that make you laugh out loud, and quiet character studies that "
                     "stay with you for a long time after you finish them, so honestly it changes every day "
                     "depending on my mood, the season and what I was talking about with shoppers most recently.")},
)

situation(
    "chat-weather-006", "chitchat", "What's the weather like in Tokyo today?",
    good=("I can't check the weather, sorry! But if you're staying in, I'd love to help you find a good manga "
          "for a cozy reading day."),
    bad={"offtopic": ("answers an off-topic question with invented facts instead of redirecting",
                      "It's 25 degrees and sunny in Tokyo today, with light winds from the south in the afternoon.")},
)

situation(
    "chat-bye-007", "chitchat", "Bye!",
    history=[("user", "Thanks for the Uzumaki recommendation!"),
             ("assistant", "You're welcome! Enjoy the spirals!")],
    good="Bye! Happy reading, and come back anytime you need a new recommendation!",
    bad={"rude": ("rude, dismissive farewell",
                  "Okay. Next time actually buy something instead of just asking.")},
)

situation(
    "chat-recap-008", "chitchat", "Haha, I'm scared already!",
    history=[("user", "Recommend me a horror manga."),
             ("assistant", "Try Uzumaki by Junji Ito — it's a spiral-obsessed classic!")],
    good="Ha! Scared already? That's the spirit — Uzumaki does that to people. Maybe keep the lights on while you read!",
)

# ================================================================================================
# More multi-turn acceptable answers (the earlier turn must be honoured)
# ================================================================================================

situation(
    "ord-followup-010", "order_tracking", "OK. So when should it arrive?",
    history=[("user", "Has my order shipped?"),
             ("assistant", "Not yet — your order MAR4T8WPZ is still processing.")],
    page=order("MAR4T8WPZ", "processing", None, "2024-06-12"),
    facts=["2024-06-12"],
    good=("Your order MAR4T8WPZ is expected to arrive by 2024-06-12. It's still processing, and tracking details "
          "will be available as soon as it ships."),
)

situation(
    "chk-followup-008", "checkout_help", "What about Discover? Can I use that instead?",
    history=[("user", "Can I pay with PayPal?"),
             ("assistant", "Yes, PayPal is accepted at checkout.")],
    chunks=[KB_PAYMENT], facts=["Discover"],
    tags=["policy"],
    good=("Yes, Discover is accepted too. At checkout you can choose Visa, Mastercard, American Express, Discover, "
          "PayPal or a MangaAssist gift card."),
)

situation(
    "chat-followup-009", "chitchat", "こわそう…でも読んでみます！", locale="ja-JP",
    history=[("user", "ホラー漫画のおすすめはありますか？"),
             ("assistant", "うずまき（Uzumaki）はいかがでしょうか。伊藤潤二（Junji Ito）先生の名作です。")],
    good="少しこわいかもしれませんが、ぜひ読んでみてください！読み終わったら、感想もお聞かせいただけるとうれしいです。",
)

situation(
    "faq-followup-011", "faq", "返金はどのくらいで届きますか？", locale="ja-JP",
    history=[("user", "返品の期限を教えてください。"),
             ("assistant", "未開封の商品は、商品到着後15日以内であれば返品できます。")],
    chunks=[KB_REFUND_JA], forbidden=STALE_RETURN_JA, facts=["5〜7営業日"],
    tags=["policy"],
    good="返品商品の到着を確認後、5〜7営業日以内に元のお支払い方法へ返金いたします。",
)

# ================================================================================================
# Output
# ================================================================================================


def build_lines() -> list[str]:
    """The dataset as JSON lines (no trailing newline on each string)."""
    seen: set[str] = set()
    for case in CASES:
        if case["test_id"] in seen:
            raise ValueError(f"duplicate test_id {case['test_id']}")
        seen.add(case["test_id"])
    return [json.dumps(case, ensure_ascii=False) for case in CASES]


def render() -> bytes:
    return ("\n".join(build_lines()) + "\n").encode("utf-8")


def main(argv: list[str]) -> int:
    content = render()
    if "--check" in argv:
        if GOLDEN_PATH.read_bytes() != content:
            print(f"{GOLDEN_PATH} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        print(f"{GOLDEN_PATH.name} is up to date ({len(CASES)} cases)")
        return 0
    GOLDEN_PATH.write_bytes(content)
    print(f"wrote {len(CASES)} cases to {GOLDEN_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
