"""Generate a synthetic week of MangaAssist production turns (seeded; the output is never committed).

Situations and answers come from datasets/mangaassist/golden.jsonl: a healthy turn replays an
acceptable golden case of its intent x locale, a degraded one a defective case. A quality slide is
injected into ONE stratum (default product_question x ja-JP) from a known day: its share of defective
answers rises by ``slide_step`` a day (3 % -> 15 %, 27 %, 39 %, ...). Personal data (e-mails,
phones, addresses, card numbers, order ids) is planted in queries and histories; every planted
string is listed in the truth file so a test can prove none reaches storage.

    python datasets/production/generate_turns.py --out /tmp/week.jsonl [--turns 20160] [--seed 7]
        [--start 2026-11-16] [--slide-intent product_question --slide-locale ja-JP --slide-day 3 | --no-slide]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter, defaultdict
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "datasets" / "mangaassist" / "golden.jsonl"

INTENT_MIX = {"recommendation": 0.22, "product_question": 0.25, "faq": 0.12, "order_tracking": 0.12,
              "return_request": 0.07, "promotion": 0.08, "checkout_help": 0.07, "chitchat": 0.07}
LOCALE_MIX = {"en-US": 0.7, "ja-JP": 0.3}
MODEL_ID = "anthropic.claude-sonnet-4"
PROMPT_VERSION = "mangaassist-prompt-2026.11"


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(str(rng.randrange(10)) for _ in range(length - len(prefix) - 1))
    for check in range(10):
        digits = body + str(check)
        total = 0
        for i, ch in enumerate(reversed(digits)):
            d = int(ch) * (2 if i % 2 else 1)
            total += d - 9 if d > 9 else d
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "0" <= c <= "9" else ("－" if c == "-" else c) for c in text)


def _order_id(rng: random.Random) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    while True:
        oid = "MA" + "".join(rng.choice(alphabet) for _ in range(7))
        if any(c.isdigit() for c in oid):
            return oid


def plant(kind: str, locale: str, rng: random.Random) -> tuple[str, str]:
    """(sentence, the personal-data string inside it)."""
    ja = locale == "ja-JP"
    if kind == "email":
        value = f"{rng.choice(['taro', 'hana', 'jane.doe', 'mike_r', 'otaku88'])}{rng.randrange(100, 999)}@" \
                f"{rng.choice(['example.com', 'mail.example.jp', 'example.co.jp'])}"
        return (f"連絡先は{value}です。" if ja else f"You can reach me at {value}."), value
    if kind == "phone":
        if ja:
            value = f"090-{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}"
            if rng.random() < 0.5:
                value = _fullwidth(value)
            return f"電話番号は{value}です。", value
        value = rng.choice([f"({rng.randrange(200, 999)}) {rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}",
                            f"+1 {rng.randrange(200, 999)} {rng.randrange(200, 999)} {rng.randrange(1000, 9999)}",
                            f"+81 90-{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}"])
        return f"Call me at {value} if needed.", value
    if kind == "address":
        if ja:
            value = (f"〒{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)} "
                     f"{rng.choice(['東京都渋谷区神南', '大阪府大阪市北区梅田', '神奈川県横浜市中区山下町'])}"
                     f"{rng.randrange(1, 9)}丁目{rng.randrange(1, 30)}番{rng.randrange(1, 20)}号")
            return f"届け先は{value}です。", value
        value = (f"{rng.randrange(10, 9999)} {rng.choice(['Maple', 'Oak', 'Cedar Hill', 'Sunset'])} "
                 f"{rng.choice(['Street', 'Avenue', 'Road', 'Blvd'])}, {rng.choice(['Springfield', 'Portland', 'Austin'])}, "
                 f"{rng.choice(['IL', 'OR', 'TX'])} {rng.randrange(10000, 99999)}")
        return f"Please ship to {value}.", value
    if kind == "card":
        digits = _luhn_complete(rng.choice(["4", "51", "37"]), 16 if rng.random() < 0.8 else 15, rng)
        value = " ".join(digits[i:i + 4] for i in range(0, len(digits), 4)) if rng.random() < 0.5 else digits
        return (f"カード番号は{value}でお願いします。" if ja else f"My card number is {value}."), value
    if kind == "order_id":
        value = _order_id(rng)
        return (f"注文番号は{value}です。" if ja else f"My order number is {value}."), value
    raise ValueError(kind)


PII_KINDS = ("email", "phone", "address", "card", "order_id")


def load_pool(path: Path = GOLDEN) -> dict[tuple[str, str, bool], list[dict[str, Any]]]:
    pool: dict[tuple[str, str, bool], list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            acceptable = bool((case.get("label") or {}).get("acceptable", True))
            pool[(case["intent"], case.get("locale", "en-US"), acceptable)].append(case)
    return pool


def defect_share(day: int, stratum: tuple[str, str], slide: tuple[str, str] | None, slide_day: int,
                 base: float, step: float) -> float:
    if slide is not None and stratum == slide and day >= slide_day:
        return min(0.9, base + step * (day - slide_day + 1))
    return base


def generate(turns: int = 20160, days: int = 7, start: date = date(2026, 11, 16), seed: int = 7,
             slide: tuple[str, str] | None = ("product_question", "ja-JP"), slide_day: int = 3,
             base_defect: float = 0.03, slide_step: float = 0.12, pii_share: float = 0.05) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The turns (TurnRecord-shaped dicts, PII in clear, as a producer would send them) and the truth:
    slide, planted strings, and each turn's situation label."""
    rng = random.Random(seed)
    pool = load_pool()
    intents, intent_w = zip(*INTENT_MIX.items())
    locales, locale_w = zip(*LOCALE_MIX.items())
    out: list[dict[str, Any]] = []
    planted: list[dict[str, str]] = []
    acceptable: dict[str, bool] = {}
    per_day = turns // days
    for day in range(days):
        day_start = datetime.combine(start + timedelta(days=day), datetime.min.time(), tzinfo=timezone.utc)
        count = per_day + (1 if day < turns % days else 0)
        for i in range(count):
            intent = rng.choices(intents, intent_w)[0]
            locale = rng.choices(locales, locale_w)[0]
            bad = rng.random() < defect_share(day, (intent, locale), slide, slide_day, base_defect, slide_step)
            case = rng.choice(pool[(intent, locale, not bad)])
            turn_id = f"turn-{(start + timedelta(days=day)).isoformat()}-{i:05d}"
            ts = day_start + timedelta(seconds=rng.randrange(86400))
            history = [dict(m) for m in case.get("conversation_history", [])]
            query = case["query"]
            if rng.random() < pii_share:
                kind = rng.choice(PII_KINDS)
                sentence, value = plant(kind, locale, rng)
                user_turns = [m for m in history if m["role"] == "user"]
                if user_turns and rng.random() < 0.5:
                    target = rng.choice(user_turns)
                    target["content"] = f"{target['content']} {sentence}"
                    where = "history"
                else:
                    query = f"{query} {sentence}"
                    where = "query"
                planted.append({"turn_id": turn_id, "kind": kind, "where": where, "value": value})
            acceptable[turn_id] = not bad
            out.append({
                "turn_id": turn_id, "session_id": f"s-{rng.getrandbits(48):012x}", "timestamp": ts.isoformat(),
                "locale": locale, "intent": intent, "query": query, "conversation_history": history,
                "page_context": case.get("page_context", {}), "response": case["response"],
                "catalog": case.get("catalog", []), "retrieved_chunks": case.get("retrieved_chunks", []),
                "model_id": MODEL_ID, "prompt_version": PROMPT_VERSION,
                "latency_ms": round(rng.lognormvariate(7.0, 0.4), 1), "situation": case["test_id"],
            })
    # Order ids the golden situations carry in their page context are personal data too.
    context_order_ids = sorted({t["page_context"]["order"]["order_id"] for t in out
                                if (t.get("page_context") or {}).get("order", {}).get("order_id")})
    truth = {
        "turns": len(out), "days": days, "start": start.isoformat(), "seed": seed,
        "slide": {"intent": slide[0], "locale": slide[1], "day_index": slide_day,
                  "first_day": (start + timedelta(days=slide_day)).isoformat(), "step": slide_step} if slide else None,
        "base_defect": base_defect,
        "planted": planted, "planted_by_kind": dict(Counter(p["kind"] for p in planted)),
        "context_order_ids": context_order_ids,
        "acceptable": acceptable,
    }
    return out, truth


def strip_truth(turn: dict[str, Any]) -> dict[str, Any]:
    """The turn as the chatbot sends it (without the generator's ``situation`` note)."""
    return {k: v for k, v in turn.items() if k != "situation"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="turns JSONL; the truth goes to <out>.truth.json")
    parser.add_argument("--turns", type=int, default=20160)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--start", default="2026-11-16")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--slide-intent", default="product_question")
    parser.add_argument("--slide-locale", default="ja-JP")
    parser.add_argument("--slide-day", type=int, default=3, help="0-based day index the slide starts")
    parser.add_argument("--no-slide", action="store_true")
    args = parser.parse_args(argv)
    turns, truth = generate(args.turns, args.days, date.fromisoformat(args.start), args.seed,
                            None if args.no_slide else (args.slide_intent, args.slide_locale), args.slide_day)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(strip_truth(t), ensure_ascii=False) + "\n" for t in turns), encoding="utf-8")
    Path(str(out) + ".truth.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"{len(turns)} turns over {args.days} days -> {out}; planted {len(truth['planted'])} personal-data strings "
          f"{truth['planted_by_kind']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
