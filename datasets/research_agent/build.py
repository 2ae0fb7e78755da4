"""Build datasets/research_agent/examples.jsonl: labelled research-agent cases (issue 11, item 5).

Ten research questions (six English, four Japanese) over a small corpus of sources written for this
set. Each question gives three acceptable answers (the reference answer with its tool calls, an
independently worded paraphrase, the reference answer without tool calls) and three defective ones.
The defects were written from the issue's definitions before the scorers existed, and rotate over
the questions so no check meets only one wording:

- dangling_citation: a citation names a source that was never retrieved;
- unsupported_citation: a citation is attached to a sentence its source does not support;
- missing_fact: the sentence carrying a required fact is left out;
- negated_fact: a required fact is stated with the opposite meaning;
- repeated_tool_call: the same call with the same arguments made twice;
- unused_tool_result: a fetched document that nothing in the answer uses;
- failed_call_retried: a failed call retried unchanged;
- fabricated_number: a number in the answer changed to one no source gives.

Run: python datasets/research_agent/build.py  (writes examples.jsonl next to this file).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (id, title, kind, url, text)
SCENARIOS = [
    dict(
        key="solar", category="factual_lookup", locale="en-US", complexity="simple", tags=["science", "retrieval"],
        query="How fast do rooftop solar panels lose output as they age?",
        sources=[
            ("nrel-2012", "Photovoltaic Degradation Rates - An Analytical Review", "paper", "https://example.org/nrel-pv",
             "Across nearly 2,000 field measurements, crystalline silicon modules lost a median of 0.5 percent of their output per year. Thin-film modules degraded faster, at about 1 percent per year. Hot climates increased degradation."),
            ("kb-warranty", "Panel warranty terms", "kb", None,
             "Most manufacturers guarantee at least 80 percent of rated output after 25 years. The warranty covers defects in materials for 10 years."),
        ],
        facts=["crystalline silicon modules lose about 0.5 percent of output per year",
               "manufacturers guarantee at least 80 percent of rated output after 25 years"],
        answer=[("Crystalline silicon modules lose a median of 0.5 percent of their output per year.", "nrel-2012"),
                ("Thin-film modules degrade faster, at about 1 percent per year, and hot climates speed this up.", "nrel-2012"),
                ("Most manufacturers guarantee at least 80 percent of rated output after 25 years.", "kb-warranty")],
        paraphrase=[("In field studies, ordinary silicon panels gave up roughly 0.5 percent of their output each year.", "nrel-2012"),
                    ("Thin-film panels fared worse at around 1 percent a year, especially in hot climates.", "nrel-2012"),
                    ("Warranties typically promise that panels still deliver 80 percent of rated output after 25 years.", "kb-warranty")],
        negated=(2, "Manufacturers do not guarantee any level of output after 25 years."),
        fabricated=(0, "Crystalline silicon modules lose a median of 2.5 percent of their output per year."),
    ),
    dict(
        key="coffee", category="synthesis", locale="en-US", complexity="medium", tags=["health", "retrieval"],
        query="Is drinking coffee every day bad for your heart?",
        sources=[
            ("cohort-2021", "Coffee consumption and cardiovascular outcomes in a cohort of 380,000 adults", "paper", "https://example.org/coffee-cohort",
             "Drinking two to three cups of coffee a day was associated with a lower risk of heart disease and of death from any cause. The association held for ground, instant and decaffeinated coffee."),
            ("kb-caffeine", "Caffeine guidance", "kb", None,
             "Healthy adults can consume up to 400 milligrams of caffeine a day, roughly four cups of brewed coffee. People with arrhythmias should ask their doctor before drinking coffee."),
        ],
        facts=["two to three cups a day was associated with a lower risk of heart disease",
               "up to 400 milligrams of caffeine a day"],
        answer=[("In a cohort of 380,000 adults, drinking two to three cups a day was associated with a lower risk of heart disease.", "cohort-2021"),
                ("The association held for ground, instant and decaffeinated coffee.", "cohort-2021"),
                ("Healthy adults can consume up to 400 milligrams of caffeine a day, roughly four cups of brewed coffee.", "kb-caffeine"),
                ("People with arrhythmias should ask their doctor first.", "kb-caffeine")],
        paraphrase=[("A large study following 380,000 adults linked two to three daily cups to a lower risk of heart disease.", "cohort-2021"),
                    ("That held whether the coffee was ground, instant or decaf.", "cohort-2021"),
                    ("For healthy adults, up to 400 milligrams of caffeine a day (about four cups) is considered safe.", "kb-caffeine"),
                    ("Anyone with an irregular heartbeat should check with a doctor.", "kb-caffeine")],
        negated=(0, "In a cohort of 380,000 adults, drinking two to three cups a day was not associated with a lower risk of heart disease."),
        fabricated=(2, "Healthy adults can consume up to 900 milligrams of caffeine a day, roughly four cups of brewed coffee."),
    ),
    dict(
        key="rover", category="factual_lookup", locale="en-US", complexity="simple", tags=["space", "retrieval"],
        query="When did the Perseverance rover land on Mars and where?",
        sources=[
            ("nasa-mission", "Mars 2020 Perseverance mission overview", "web", "https://example.org/mars2020",
             "Perseverance landed in Jezero Crater on February 18, 2021. The crater once held a lake fed by a river delta. The rover carried the Ingenuity helicopter."),
            ("kb-ingenuity", "Ingenuity helicopter", "kb", None,
             "Ingenuity made the first powered flight on another planet on April 19, 2021. It completed 72 flights before its mission ended in January 2024."),
        ],
        facts=["Perseverance landed in Jezero Crater", "landed on February 18, 2021"],
        answer=[("Perseverance landed in Jezero Crater on February 18, 2021.", "nasa-mission"),
                ("The crater once held a lake fed by a river delta.", "nasa-mission"),
                ("The rover carried the Ingenuity helicopter, which made the first powered flight on another planet on April 19, 2021.", "kb-ingenuity")],
        paraphrase=[("The rover touched down on February 18, 2021, inside Jezero Crater.", "nasa-mission"),
                    ("Scientists picked the site because the crater was once a lake with a river delta.", "nasa-mission"),
                    ("It brought along Ingenuity, which flew on April 19, 2021, the first powered flight on another planet.", "kb-ingenuity")],
        negated=(0, "Perseverance did not land in Jezero Crater; it landed on February 18, 2021."),
        fabricated=(0, "Perseverance landed in Jezero Crater on March 4, 2021."),
    ),
    dict(
        key="sleep", category="synthesis", locale="en-US", complexity="complex", tags=["health", "retrieval"],
        query="Why does sleep matter for memory, and how much do adults need?",
        sources=[
            ("review-2019", "Sleep and memory consolidation: a review", "paper", "https://example.org/sleep-memory",
             "During slow-wave sleep the hippocampus replays recent experiences, which strengthens memories. Sleep deprivation reduces the ability to form new memories by about 40 percent."),
            ("kb-sleep", "Sleep recommendations", "kb", None,
             "Adults aged 18 to 64 need seven to nine hours of sleep per night. Older adults need seven to eight hours."),
            ("blog-hacks", "10 sleep hacks", "web", "https://example.org/sleep-hacks",
             "Blue light from phones can delay sleep. A cool bedroom helps you fall asleep faster."),
        ],
        facts=["the hippocampus replays recent experiences during slow-wave sleep",
               "adults need seven to nine hours of sleep per night"],
        answer=[("During slow-wave sleep the hippocampus replays recent experiences, which strengthens memories.", "review-2019"),
                ("Sleep deprivation reduces the ability to form new memories by about 40 percent.", "review-2019"),
                ("Adults aged 18 to 64 need seven to nine hours of sleep per night.", "kb-sleep")],
        paraphrase=[("While you are in slow-wave sleep, the hippocampus replays what happened recently, and that strengthens memories.", "review-2019"),
                    ("Without enough sleep, the ability to form new memories drops by about 40 percent.", "review-2019"),
                    ("Most adults need seven to nine hours of sleep a night.", "kb-sleep")],
        negated=(2, "Adults do not need seven to nine hours of sleep per night."),
        fabricated=(1, "Sleep deprivation reduces the ability to form new memories by about 75 percent."),
    ),
    dict(
        key="batteries", category="comparison", locale="en-US", complexity="medium", tags=["technology", "retrieval"],
        query="How do LFP batteries compare with NMC batteries for electric cars?",
        sources=[
            ("ev-review", "Lithium-ion chemistries for electric vehicles", "paper", "https://example.org/ev-chem",
             "LFP cells store less energy per kilogram than NMC cells, so cars with LFP packs have shorter range for the same weight. LFP cells tolerate 3,000 or more full charge cycles, about twice as many as NMC cells."),
            ("kb-ev", "EV battery buying guide", "kb", None,
             "LFP packs contain no cobalt or nickel, which makes them cheaper. Manufacturers recommend charging LFP packs to 100 percent regularly, while NMC packs are best kept at 80 percent for daily use."),
        ],
        facts=["LFP cells store less energy per kilogram than NMC cells",
               "LFP packs contain no cobalt or nickel"],
        answer=[("LFP cells store less energy per kilogram than NMC cells, so range is shorter for the same weight.", "ev-review"),
                ("LFP cells tolerate 3,000 or more full charge cycles, about twice as many as NMC cells.", "ev-review"),
                ("LFP packs contain no cobalt or nickel, which makes them cheaper.", "kb-ev"),
                ("NMC packs are best kept at 80 percent for daily use.", "kb-ev")],
        paraphrase=[("Per kilogram, LFP cells hold less energy than NMC cells, which costs some range.", "ev-review"),
                    ("In exchange they last longer: 3,000 or more full cycles, roughly double NMC.", "ev-review"),
                    ("Because LFP packs use no cobalt or nickel, they are cheaper to make.", "kb-ev"),
                    ("For daily driving, NMC packs should stay at around 80 percent charge.", "kb-ev")],
        negated=(2, "LFP packs are not free of cobalt or nickel, so they cost about the same."),
        fabricated=(1, "LFP cells tolerate 10,000 or more full charge cycles, about twice as many as NMC cells."),
    ),
    dict(
        key="bees", category="current_events", locale="en-US", complexity="complex", tags=["ecology", "policy"],
        query="What did the EU decide about neonicotinoid pesticides and why?",
        sources=[
            ("efsa-2018", "EFSA assessment of neonicotinoids", "paper", "https://example.org/efsa-neonic",
             "The European Food Safety Authority concluded that most uses of three neonicotinoids pose a risk to wild bees and honeybees. The assessment covered clothianidin, imidacloprid and thiamethoxam."),
            ("eu-ban", "EU restricts neonicotinoids", "web", "https://example.org/eu-ban",
             "In April 2018 EU member states voted to ban outdoor use of the three neonicotinoids. Use in permanent greenhouses remained allowed."),
        ],
        facts=["member states voted to ban outdoor use of three neonicotinoids",
               "use in permanent greenhouses remained allowed"],
        answer=[("The European Food Safety Authority concluded that most uses of three neonicotinoids pose a risk to wild bees and honeybees.", "efsa-2018"),
                ("In April 2018 EU member states voted to ban outdoor use of the three neonicotinoids.", "eu-ban"),
                ("Use in permanent greenhouses remained allowed.", "eu-ban")],
        paraphrase=[("EFSA found that most uses of clothianidin, imidacloprid and thiamethoxam put wild bees and honeybees at risk.", "efsa-2018"),
                    ("Acting on that, EU member states voted in April 2018 to ban the outdoor use of the three neonicotinoids.", "eu-ban"),
                    ("Permanent greenhouses were exempt, so use there remained allowed.", "eu-ban")],
        negated=(2, "Use in permanent greenhouses was not allowed either."),
        fabricated=(1, "In April 2015 EU member states voted to ban outdoor use of the three neonicotinoids."),
    ),
    dict(
        key="ja-manga", category="factual_lookup", locale="ja-JP", complexity="simple", tags=["publishing", "retrieval", "japanese"],
        query="日本の電子コミック市場はどのくらいの規模ですか？",
        sources=[
            ("aj-2023", "出版月報 2023年 電子出版市場", "paper", "https://example.org/ja-ebook",
             "2023年の電子コミック市場は4830億円で、前年より7.8パーセント増加した。紙のコミック市場は2000億円を下回った。"),
            ("kb-ja-pub", "出版市場の概要", "kb", None,
             "コミック市場全体の約7割を電子コミックが占める。電子コミックの成長はスマートフォン向けアプリが牽引している。"),
        ],
        facts=["2023年の電子コミック市場は4830億円", "コミック市場全体の約7割を電子コミックが占める"],
        answer=[("2023年の電子コミック市場は4830億円で、前年より7.8パーセント増加しました。", "aj-2023"),
                ("コミック市場全体の約7割を電子コミックが占めています。", "kb-ja-pub"),
                ("成長はスマートフォン向けアプリが牽引しています。", "kb-ja-pub")],
        paraphrase=[("電子コミックの市場規模は2023年に4830億円となり、前年比7.8パーセントの伸びでした。", "aj-2023"),
                    ("いまではコミック市場全体の約7割が電子コミックです。", "kb-ja-pub"),
                    ("その伸びを支えているのはスマートフォン向けのアプリです。", "kb-ja-pub")],
        negated=(1, "電子コミックはコミック市場全体の約7割を占めていません。"),
        fabricated=(0, "2023年の電子コミック市場は9200億円で、前年より7.8パーセント増加しました。"),
    ),
    dict(
        key="ja-quake", category="how_to", locale="ja-JP", complexity="medium", tags=["safety", "policy", "japanese"],
        query="地震に備えて家庭で何を準備すればよいですか？",
        sources=[
            ("kb-bousai", "家庭の防災備蓄ガイド", "kb", None,
             "飲料水は1人1日3リットルを目安に、最低3日分を備蓄する。家具は転倒防止器具で壁に固定する。"),
            ("cao-guide", "内閣府 防災情報", "web", "https://example.org/bousai",
             "非常用持ち出し袋には懐中電灯、携帯ラジオ、常備薬を入れておく。避難場所と家族の連絡方法を事前に確認しておく。"),
        ],
        facts=["飲料水は1人1日3リットル", "家具は転倒防止器具で壁に固定する"],
        answer=[("飲料水は1人1日3リットルを目安に、最低3日分を備蓄してください。", "kb-bousai"),
                ("家具は転倒防止器具で壁に固定しましょう。", "kb-bousai"),
                ("非常用持ち出し袋には懐中電灯、携帯ラジオ、常備薬を入れておきます。", "cao-guide"),
                ("避難場所と家族の連絡方法も事前に確認しておきましょう。", "cao-guide")],
        paraphrase=[("水は1人あたり1日3リットル、少なくとも3日分を用意しておくと安心です。", "kb-bousai"),
                    ("倒れやすい家具は転倒防止器具を使って壁に固定してください。", "kb-bousai"),
                    ("持ち出し袋には懐中電灯と携帯ラジオ、常備薬を入れましょう。", "cao-guide"),
                    ("家族との連絡方法と避難場所も前もって決めておきます。", "cao-guide")],
        negated=(1, "家具を壁に固定する必要はありません。"),
        fabricated=(0, "飲料水は1人1日10リットルを目安に、最低3日分を備蓄してください。"),
    ),
    dict(
        key="ja-sakura", category="current_events", locale="ja-JP", complexity="simple", tags=["climate", "retrieval", "japanese"],
        query="東京の桜の開花日は昔より早くなっていますか？",
        sources=[
            ("jma-sakura", "気象庁 さくらの開花日の長期変化", "paper", "https://example.org/jma-sakura",
             "東京のさくらの開花日は50年あたり約5日早くなっている。都市化と気温上昇が主な要因とされる。"),
            ("news-2023", "2023年 東京で桜が開花", "web", "https://example.org/sakura-2023",
             "2023年の東京の開花日は3月14日で、統計開始以来最も早い記録に並んだ。"),
        ],
        facts=["50年あたり約5日早くなっている", "2023年の東京の開花日は3月14日"],
        answer=[("東京のさくらの開花日は50年あたり約5日早くなっています。", "jma-sakura"),
                ("都市化と気温上昇が主な要因とされています。", "jma-sakura"),
                ("2023年の東京の開花日は3月14日で、統計開始以来最も早い記録に並びました。", "news-2023")],
        paraphrase=[("長期的に見ると、東京の桜は50年で約5日早く咲くようになりました。", "jma-sakura"),
                    ("背景には気温上昇と都市化があると考えられています。", "jma-sakura"),
                    ("2023年は3月14日に開花し、最も早い記録と並びました。", "news-2023")],
        negated=(0, "東京のさくらの開花日は早くなっていません。"),
        fabricated=(2, "2023年の東京の開花日は3月2日で、統計開始以来最も早い記録に並びました。"),
    ),
    dict(
        key="ja-nisa", category="comparison", locale="ja-JP", complexity="complex", tags=["finance", "policy", "japanese"],
        query="新しいNISAのつみたて投資枠と成長投資枠の違いは何ですか？",
        sources=[
            ("fsa-nisa", "金融庁 新しいNISA", "kb", "https://example.org/fsa-nisa",
             "つみたて投資枠の年間投資上限額は120万円、成長投資枠は240万円である。非課税保有限度額は合計1800万円で、そのうち成長投資枠は1200万円までである。"),
            ("guide-nisa", "NISAの始め方", "web", "https://example.org/nisa-guide",
             "つみたて投資枠で買えるのは長期の積立に適した投資信託に限られる。成長投資枠では上場株式も購入できる。"),
        ],
        facts=["つみたて投資枠の年間投資上限額は120万円", "成長投資枠では上場株式も購入できる"],
        answer=[("つみたて投資枠の年間投資上限額は120万円、成長投資枠は240万円です。", "fsa-nisa"),
                ("非課税保有限度額は合計1800万円で、そのうち成長投資枠は1200万円までです。", "fsa-nisa"),
                ("成長投資枠では上場株式も購入できます。", "guide-nisa")],
        paraphrase=[("年間に投資できる上限は、つみたて投資枠が120万円、成長投資枠が240万円です。", "fsa-nisa"),
                    ("生涯の非課税保有限度額は1800万円で、成長投資枠で使えるのは1200万円までです。", "fsa-nisa"),
                    ("上場株式を買えるのは成長投資枠のほうです。", "guide-nisa")],
        negated=(2, "成長投資枠では上場株式は購入できません。"),
        fabricated=(1, "非課税保有限度額は合計3000万円で、そのうち成長投資枠は1200万円までです。"),
    ),
]

# An off-topic page an agent might fetch and never use (unused_tool_result).
STRAY = {"en": ("wiki-pasta", "History of pasta", "Dried pasta spread through Italy in the 12th century."),
         "ja": ("wiki-ramen", "ラーメンの歴史", "ラーメンは明治時代に横浜の中華街で広まった。")}

# The answer sentence that carries a required fact (the other one than the negated sentence's, when
# the answer has two), left out by missing_fact.
MISSING = {"solar": 0, "coffee": 2, "rover": 0, "sleep": 0, "batteries": 0, "bees": 1, "ja-manga": 0, "ja-quake": 0,
           "ja-sakura": 2, "ja-nisa": 0}

# Defect rotation: three defects per question, every type at least three times.
DEFECTS = ["dangling_citation", "unsupported_citation", "missing_fact", "negated_fact", "repeated_tool_call",
           "unused_tool_result", "failed_call_retried", "fabricated_number"]


def _tool_calls(s: dict) -> list[dict]:
    ids = [src[0] for src in s["sources"]]
    search = {"name": "search", "arguments": {"query": s["query"], "top_k": 5},
              "result": [{"id": src[0], "title": src[1]} for src in s["sources"]]}
    fetches = [{"name": "fetch", "arguments": {"id": src[0]}, "result": src[4]}
               for src in s["sources"] if src[0] in {sid for _, sid in s["answer"]}]
    assert all(f["arguments"]["id"] in ids for f in fetches)
    return [search, *fetches]


def _case(s: dict, variant: str, sentences: list[tuple[str, str]], tool_calls: list[dict] | None,
          acceptable: bool, defect: str | None, sources: list | None = None) -> dict:
    sources = sources or s["sources"]
    response = (" " if s["locale"] == "en-US" else "").join(text for text, _ in sentences)
    case = {
        "test_id": f"ra-{s['key']}-{variant}",
        "intent": s["category"], "locale": s["locale"], "query": s["query"], "response": response,
        "retrieved_chunks": [src[4] for src in sources],
        "sources": [{"id": i, "title": t, "kind": k, **({"url": u} if u else {}), "text": x} for i, t, k, u, x in sources],
        "citations": [{"source_id": sid, "sentence": text} for text, sid in sentences if sid],
        "required_facts": s["facts"],
        "complexity": s["complexity"], "tags": s["tags"],
        "label": {"acceptable": acceptable, **({"defect": defect} if defect else {})},
    }
    if tool_calls:
        case["tool_calls"] = tool_calls
    return case


def _defect(s: dict, kind: str) -> dict:
    answer = list(s["answer"])
    calls = _tool_calls(s)
    sources = None
    ja = s["locale"] == "ja-JP"
    if kind == "dangling_citation":
        # The agent cites a document it never retrieved (a remembered or invented reference).
        text, _ = answer[1]
        answer[1] = (text, "src-" + ("7" if ja else "12"))
    elif kind == "unsupported_citation":
        # A sentence attributed to the other source, which says nothing of the kind.
        text, sid = answer[0]
        other = next(src[0] for src in s["sources"] if src[0] != sid)
        answer[0] = (text, other)
    elif kind == "missing_fact":
        del answer[MISSING[s["key"]]]
    elif kind == "negated_fact":
        i, text = s["negated"]
        answer[i] = (text, answer[i][1])
    elif kind == "repeated_tool_call":
        calls.insert(2, copy.deepcopy(calls[1]))
    elif kind == "unused_tool_result":
        sid, title, text = STRAY["ja" if ja else "en"]
        calls.append({"name": "fetch", "arguments": {"id": sid}, "result": text})
        sources = [*s["sources"], (sid, title, "web", None, text)]
    elif kind == "failed_call_retried":
        failed = {"name": "fetch", "arguments": {"id": calls[1]["arguments"]["id"], "format": "pdf"},
                  "error": "HTTP 503 Service Unavailable"}
        calls[1:1] = [failed, copy.deepcopy(failed)]
    elif kind == "fabricated_number":
        i, text = s["fabricated"]
        answer[i] = (text, answer[i][1])
    return _case(s, kind.replace("_", "-"), answer, calls, False, kind, sources)


def build() -> list[dict]:
    rows = []
    for n, s in enumerate(SCENARIOS):
        rows.append(_case(s, "ok", s["answer"], _tool_calls(s), True, None))
        rows.append(_case(s, "ok-paraphrase", s["paraphrase"], _tool_calls(s), True, None))
        rows.append(_case(s, "ok-no-tools", s["answer"], None, True, None))
        for k in range(3):
            rows.append(_defect(s, DEFECTS[(3 * n + k) % len(DEFECTS)]))
    return rows


def main() -> None:
    rows = build()
    path = HERE / "examples.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} cases to {path}")


if __name__ == "__main__":
    main()
