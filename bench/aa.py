"""`python -m bench aa`: the A/A test of the paired gate (issue 9).

The candidate and the control are the same system: each golden case's recorded answer, reworded from
run to run without changing what it says (``reword``). Each repetition rewords both arms with their own
seeds, scores both with the offline judge through ``evaluate_cases`` (the direct engine) and builds the
report with the control arm. Any gate failure the paired rules raise is then a false positive: nothing
changed but the wording. The golden set holds deliberately defective answers, so the gate fails every
run for its item rules (hard failures, pass rate); those reasons are counted apart.

The rewording is general (no rule for a particular case): contractions expanded or contracted, a few
synonyms from a small general list, openers swapped among equivalents, an exclamation mark turned into
a full stop where the answer keeps others, and two adjacent sentences of a paragraph swapped when the
second does not lean on the first (no pronoun or connective at its start). Lines that are list items
(product cards: title, price, availability) are left exactly as they are, and only lowercase words are
replaced, so titles and names are never touched.
"""

from __future__ import annotations

import random
import re
import time
from statistics import fmean
from typing import Any

from bench import ROOT, shown, warm_up

DEFAULT_REPETITIONS = 30
DEFAULT_SEED = 9
TARGETS = {"false_positive_rate_max": 0.05, "repetitions_min": 20}

# --------------------------------------------------------------------------------------------------
# Rewording
# --------------------------------------------------------------------------------------------------

# Contractions whose expansion is unambiguous (not "I'd": would or had; not "it's" before "been").
_CONTRACTIONS = {
    "you're": "you are", "we're": "we are", "they're": "they are", "i'm": "i am", "don't": "do not",
    "doesn't": "does not", "can't": "cannot", "won't": "will not", "isn't": "is not", "aren't": "are not",
    "you'll": "you will", "we'll": "we will", "it's": "it is", "that's": "that is", "there's": "there is",
    "here's": "here is", "didn't": "did not", "wasn't": "was not", "let's": "let us",
}
_EXPANSIONS = {v: k for k, v in _CONTRACTIONS.items() if k != "let's"}  # "let us" reads oddly contracted back

# Groups of interchangeable lowercase words or phrases (general English and Japanese, no domain terms).
_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("great", "wonderful"), ("really", "truly"), ("perfect", "ideal"), ("favorites", "favourites"),
    ("right now", "at the moment"), ("start with", "begin with"), ("glad to", "happy to"),
    ("just", "simply"), ("quickly", "promptly"), ("choose", "pick"),
    ("おすすめ", "オススメ"), ("ぜひ", "是非"), ("すぐに", "すぐ"), ("いかがでしょうか", "いかがですか"),
    ("ただいま", "現在"), ("とても", "大変"),
)
_OPENERS = ("Sure!", "Of course!", "Certainly!", "Absolutely!")

# A sentence that starts with one of these leans on the sentence before it: never moved.
_ANAPHORA = re.compile(
    r"^(it|its|this|that|these|those|they|them|their|he|she|his|her|both|either|neither|so|but|and|or|also|"
    r"then|however|plus|there|here|if|otherwise|meanwhile|still|yet|the former|the latter|one|another|"
    r"each|which)\b|^(また|さらに|そのため|ただし|なお|その|この|それ|これ|どれも|どちら|前者|後者|特に|でも|"
    r"しかし|そして|ですので|なので|もし)",
    re.IGNORECASE,
)
# A sentence ends at . ! ? followed by white space (not "$9.99"), or at a Japanese full stop or mark.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])(?![。！？」）])")


def _sentences(line: str) -> list[str]:
    """The line's sentences, each with the white space after it (joined, they give the line back)."""
    out, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        if match.end() > start:
            out.append(line[start:match.end()])
            start = match.end()
    if start < len(line):
        out.append(line[start:])
    return out


def _case_like(template: str, replacement: str) -> str:
    return replacement[0].upper() + replacement[1:] if template[:1].isupper() else replacement


def _swap_contractions(text: str, rng: random.Random) -> str:
    expand = rng.random() < 0.5  # one direction per answer: a real writer is consistent

    def contract_or_expand(match: re.Match) -> str:
        word = match.group(0)
        lower = word.lower().replace("’", "'")
        if expand and lower in _CONTRACTIONS:
            if lower in ("it's", "that's", "there's") and text[match.end():match.end() + 6].lower() == " been ":
                return word
            return _case_like(word, _CONTRACTIONS[lower])
        if not expand and lower in _EXPANSIONS:
            return _case_like(word, _EXPANSIONS[lower])
        return word

    pattern = r"\b(?:" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r"|" + "|".join(
        re.escape(k) for k in _EXPANSIONS) + r")\b"
    return re.sub(pattern, contract_or_expand, text, flags=re.IGNORECASE)


def _swap_synonyms(text: str, rng: random.Random) -> str:
    for group in _SYNONYMS:
        if rng.random() < 0.5:
            continue
        for word in group:
            others = [w for w in group if w != word]
            choice = rng.choice(others)
            if word.isascii():
                # Whole lowercase words only: a capitalised word may be part of a title or a name.
                text = re.sub(rf"(?<![\w'-]){re.escape(word)}(?![\w'-])", choice, text)
            else:
                text = text.replace(word, choice)
            break
    return text


def _swap_opener(text: str, rng: random.Random) -> str:
    for opener in _OPENERS:
        if text.startswith(opener + " "):
            return rng.choice([o for o in _OPENERS if o != opener]) + text[len(opener):]
    return text


def _soften_exclamations(sentences: list[str], rng: random.Random) -> list[str]:
    marks = sum(s.rstrip().endswith(("!", "！")) for s in sentences)
    if marks < 2:
        return sentences  # a single exclamation carries the answer's tone: kept
    out = []
    for s in sentences:
        stripped = s.rstrip()
        if stripped.endswith(("!", "！")) and not stripped.endswith(("!!", "！！")) and rng.random() < 0.3:
            end = "。" if stripped.endswith("！") else "."
            s = stripped[:-1] + end + s[len(stripped):]
        out.append(s)
    return out


def _reorder(sentences: list[str], rng: random.Random) -> list[str]:
    """Swap one pair of adjacent sentences (never the paragraph's first) that do not lean on each other."""
    candidates = [i for i in range(1, len(sentences) - 1)
                  if not _ANAPHORA.match(sentences[i].strip()) and not _ANAPHORA.match(sentences[i + 1].strip())]
    if not candidates or rng.random() < 0.5:
        return sentences
    i = rng.choice(candidates)
    a, b = sentences[i], sentences[i + 1]
    # Keep each sentence's own trailing space where it now stands.
    a_core, b_core = a.rstrip(), b.rstrip()
    out = list(sentences)
    out[i] = b_core + a[len(a_core):]
    out[i + 1] = a_core + b[len(b_core):]
    return out


def reword(response: str | None, rng: random.Random) -> str | None:
    """The same answer in other words (see the module docstring). None and "" stay as they are."""
    if not response:
        return response
    lines = response.split("\n")
    out = []
    for index, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith(("-", "*", "•", "・")) or re.match(r"\s*\d+[.)]\s", line):
            out.append(line)  # list items and cards verbatim
            continue
        if index == 0:
            line = _swap_opener(line, rng)
        line = _swap_contractions(line, rng)
        line = _swap_synonyms(line, rng)
        sentences = _sentences(line)
        if "".join(sentences) == line and sentences:
            sentences = _soften_exclamations(sentences, rng)
            sentences = _reorder(sentences, rng)
            line = "".join(sentences)
        out.append(line)
    return "\n".join(out)


def arm_seed(seed: int, repetition: int, arm: str, test_id: str) -> str:
    """A seed per repetition, arm and case (a string: ``random`` hashes it the same in every process)."""
    return f"aa:{seed}:{repetition}:{arm}:{test_id}"


def reworded_cases(cases, seed: int, repetition: int, arm: str) -> list:
    return [case.model_copy(update={"response": reword(case.response, random.Random(arm_seed(seed, repetition, arm,
                                                                                        case.test_id)))})
            for case in cases]


# --------------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------------


def run(args) -> dict[str, Any]:
    from fmquality.run.dataset import load_catalog, load_dataset
    from fmquality.run.evaluate import evaluate_cases
    from fmquality.judges.offline import OfflineJudge
    from fmquality.report.paired import regressed_intervals
    from fmquality.report.build import build_report
    from fmquality.config.rubric import load_rubric

    rubric = load_rubric()
    loaded = load_dataset(args.dataset, load_catalog(args.catalog) if args.catalog else None)
    if loaded.errors:
        raise SystemExit(f"{len(loaded.errors)} invalid line(s) in {args.dataset}")
    cases = loaded.cases[: args.limit] if args.limit else loaded.cases
    judge = OfflineJudge()
    warm_up(cases[0], rubric)
    repetitions = args.aa_repetitions

    runs: list[dict[str, Any]] = []
    paired_failures = any_failures = 0
    changed = total_answers = 0
    started = time.perf_counter()
    for rep in range(repetitions):
        arms = {}
        for arm in ("candidate", "control"):
            varied = reworded_cases(cases, args.aa_seed, rep, arm)
            changed += sum(1 for a, b in zip(cases, varied) if a.response != b.response)
            total_answers += len(varied)
            results = evaluate_cases(varied, rubric, judge, run_id=f"aa-{rep}", concurrency=1)
            arms[arm] = [r.model_copy(update={"arm": arm}) for r in results]
        report = build_report(arms["candidate"], rubric, run_id=f"aa-{rep}", dataset=args.dataset, judge="offline",
                              control_results=arms["control"])
        paired = report.paired
        regressed = regressed_intervals(paired) if paired else []
        paired_reasons = [r for r in report.gate.reasons if "candidate − control" in r or "paired comparison" in r
                          or r.startswith("control arm")]
        paired_failures += bool(paired_reasons)
        any_failures += not report.gate.passed
        intervals = [i for i in ([paired.overall] if paired and paired.overall else []) + (paired.subsets if paired else [])]
        widest = max(intervals, key=lambda i: i.ci_high - i.ci_low) if intervals else None
        runs.append({
            "repetition": rep,
            "gate_passed": report.gate.passed,
            "paired_rule_failed": bool(paired_reasons),
            "paired_reasons": paired_reasons,
            "regressed_subsets": [i.subset for i in regressed],
            "pairs": paired.pairs if paired else 0,
            "unpaired": len(paired.unpaired) if paired else 0,
            "overall_difference": paired.overall.mean_difference if paired and paired.overall else None,
            "overall_ci": [paired.overall.ci_low, paired.overall.ci_high] if paired and paired.overall else None,
            "subsets": len(paired.subsets) if paired else 0,
            "widest": {"subset": widest.subset, "n": widest.n, "ci": [widest.ci_low, widest.ci_high],
                       "width": round(widest.ci_high - widest.ci_low, 4)} if widest else None,
            "items_with_a_difference": sum(1 for i in paired.items if i.difference) if paired else 0,
        })
        print(f"  A/A {rep + 1}/{repetitions}: overall {runs[-1]['overall_difference']} "
              f"CI {runs[-1]['overall_ci']} paired-rule failure: {runs[-1]['paired_rule_failed']}", flush=True)
    wall = time.perf_counter() - started

    differences = [abs(r["overall_difference"]) for r in runs if r["overall_difference"] is not None]
    widest_run = max((r for r in runs if r["widest"]), key=lambda r: r["widest"]["width"], default=None)
    rate = paired_failures / repetitions if repetitions else None
    rules = rubric.gate.paired
    return {
        "workload": {
            "dataset": shown(args.dataset),
            "cases": len(cases),
            "repetitions": repetitions,
            "seed": args.aa_seed,
            "judge": "offline",
            "engine": "direct",
            "rewording": "contractions, general synonyms, openers, exclamation marks, adjacent independent "
                         "sentences; list items verbatim; per repetition, arm and case seed",
            "paired_rules": rules.model_dump(),
        },
        "answers_reworded": round(changed / total_answers, 4) if total_answers else None,
        "false_positive_rate": None if rate is None else round(rate, 4),
        "paired_rule_failures": paired_failures,
        "gate_failures_any_reason": any_failures,
        "n": repetitions,
        "mean_abs_overall_difference": round(fmean(differences), 5) if differences else None,
        "max_abs_overall_difference": round(max(differences), 5) if differences else None,
        "widest_interval": ({"repetition": widest_run["repetition"], **widest_run["widest"]}
                            if widest_run else None),
        "wall_s": round(wall, 2),
        "wall_s_per_repetition": round(wall / repetitions, 3) if repetitions else None,
        "runs": runs,
        "targets": {
            "false_positive_rate <= 0.05": rate is not None and rate <= TARGETS["false_positive_rate_max"],
            "repetitions >= 20": repetitions >= TARGETS["repetitions_min"],
        },
    }


def format_summary(result: dict[str, Any]) -> str:
    w = result["widest_interval"]
    lines = [
        f"A/A: {result['paired_rule_failures']}/{result['n']} runs failed a paired rule "
        f"(false-positive rate {result['false_positive_rate']:.1%}); {result['gate_failures_any_reason']}/"
        f"{result['n']} failed the gate for any reason (the golden set's defective items)",
        f"  {result['workload']['cases']} cases x 2 arms, {result['answers_reworded']:.0%} of answers reworded; "
        f"mean |overall difference| {result['mean_abs_overall_difference']}, max "
        f"{result['max_abs_overall_difference']}",
    ]
    if w:
        lines.append(f"  widest interval: {w['subset']} (n={w['n']}) {w['ci']} in repetition {w['repetition']}")
    lines.append(f"  wall {result['wall_s']} s ({result['wall_s_per_repetition']} s per repetition)")
    lines += [f"  {'met' if ok else 'MISSED'}: {name}" for name, ok in result["targets"].items()]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a quick look at the rewording
    import json
    import sys

    path = ROOT / "datasets/mangaassist/golden.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines()[: int(sys.argv[1]) if len(sys.argv) > 1 else 5]:
        case = json.loads(line)
        print(case["test_id"], "\n  ", case.get("response"), "\n->", reword(case.get("response"),
                                                                          random.Random(case["test_id"])))
