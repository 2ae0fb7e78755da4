"""A malformed-output storm through the real engine, the real BedrockJudge and a real boto3 client
against the stand-in: 35 % of the stand-in's replies are malformed (a missing sub-score, a level out
of range, text instead of the tool call, a verdict cut off at maxTokens), drawn at random and
independently for every request, the re-ask included. The same golden items are scored without the
re-ask (before: a single attempt per call, so none is left for a re-ask) and with it (after).

What the mechanism must reach: at least half of the re-asks recover a valid verdict (with
independent faults the expectation is 1 - 0.35 = 65 %; a real model that repeats its mistake would
do worse, one that reads the reason better), at least halving the unscored dimensions and cutting
the unscored items by at least 40 %. The stand-in's faults are seeded and the items run one at a
time, so the figures are reproducible; nothing here depends on timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.standin import MALFORMED, BedrockStandin
from fmquality.run.dataset import load_catalog, load_dataset
from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.bedrock.judge import BedrockJudge

ROOT = Path(__file__).resolve().parents[2]
MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # the rubric's judge
MALFORMED_RATE = 0.35
ITEMS = 40  # the first golden items; about 140 judge requests (the whole set: see the module doc)
SEED = 35

# The floors the re-ask must reach (see the module doc).
MIN_RECOVERY = 0.5
MAX_UNSCORED_DIMENSIONS_RATIO = 0.5
MAX_UNSCORED_ITEMS_RATIO = 0.6


@pytest.fixture(scope="module")
def items():
    cases = load_dataset(ROOT / "datasets/mangaassist/golden.jsonl",
                         load_catalog(ROOT / "datasets/mangaassist/catalog.json")).cases
    return cases[:ITEMS]


def storm(items, rubric, *, reask: bool) -> dict:
    with BedrockStandin(fault_rate=MALFORMED_RATE, fault_kinds=MALFORMED, seed=SEED, keep_bodies=False,
                        max_lifetime_s=300.0) as standin:
        judge = BedrockJudge(MODEL_ID, standin.client(), sleep=lambda _: None, max_attempts=None if reask else 1)
        results = evaluate_cases(items, rubric, judge, concurrency=1, adaptive=False)
        stats = standin.stats()
    judged = [d for r in results for d in r.dimension_scores.values() if d.judge_calls]
    unscored = [d for d in judged if d.status == "unscored"]
    # Only malformed output is injected (no throttling, no transport faults): a second call is a re-ask.
    reasked = [d for d in judged if d.judge_calls == 2]
    return {
        "items": len(results),
        "unscored_items": sum(r.status == "unscored" for r in results),
        "judged_dimensions": len(judged),
        "unscored_dimensions": len(unscored),
        "reasons": [d.unscored_reason for d in unscored],
        "calls": sum(d.judge_calls for d in judged),
        "requests": stats["requests"],
        "malformed": sum(stats["faults"].values()),
        "reasks": len(reasked),
        "recovered": sum(d.status == "scored" for d in reasked),
    }


def test_re_asking_once_recovers_most_malformed_verdicts_in_a_fault_storm(items, rubric):
    before = storm(items, rubric, reask=False)
    after = storm(items, rubric, reask=True)
    figures = {k: v for k, v in after.items() if k != "reasons"}
    print(f"\nmalformed-output storm ({MALFORMED_RATE:.0%}, seed {SEED}): before "
          f"{ {k: v for k, v in before.items() if k != 'reasons'} } after {figures}")

    # Before: one call per judged dimension, and every malformed reply left its dimension unscored.
    assert before["items"] == after["items"] == ITEMS
    assert before["requests"] == before["calls"] == before["judged_dimensions"]
    assert before["unscored_dimensions"] == before["malformed"] > 0 and before["reasks"] == 0
    # After: each malformed first reply was re-asked once (a malformed re-ask is not re-asked again),
    # every call is counted, and only a second malformed reply leaves a dimension unscored.
    assert after["judged_dimensions"] == before["judged_dimensions"]
    assert after["requests"] == after["calls"] == after["judged_dimensions"] + after["reasks"]
    assert after["malformed"] == after["reasks"] + after["unscored_dimensions"]
    assert after["unscored_dimensions"] == after["reasks"] - after["recovered"]
    # The re-ask conversation is valid Converse (the stand-in refuses what Bedrock refuses): nothing is
    # unscored for any reason but a second invalid verdict.
    assert all(r.startswith("invalid judge output: ") and "re-asked once after: " in r for r in after["reasons"])

    assert after["recovered"] / after["reasks"] >= MIN_RECOVERY
    assert after["unscored_dimensions"] <= MAX_UNSCORED_DIMENSIONS_RATIO * before["unscored_dimensions"]
    assert after["unscored_items"] <= MAX_UNSCORED_ITEMS_RATIO * before["unscored_items"]
