"""report.html in a real headless browser (Chromium from the Debian packages; skipped where it is not
installed): the page loads with no script error, a filter narrows the table, and an item's details
show its answer, expected facts, hard failure and sub-scores."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.report.build import build_report, results_to_jsonl
from fmquality.report.page import write_run_page
from fmquality.scoring.composite import combine

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: apt-get install chromium")
RUBRIC = load_rubric()


def _result(test_id: str, score: float, locale: str, answer: str, hard: bool = False):
    case = TestCase(test_id=test_id, intent="return_request", locale=locale, query="返品できますか？", response=answer)
    scores = {d: DimensionScore(dimension=d, status="scored", score=score)
              for d in DIMENSIONS}
    result = combine(case, RUBRIC, scores)
    if hard:
        scores["factual_accuracy"] = scores["factual_accuracy"].model_copy(update={
            "sub_scores": {"policy_accuracy": 0.0}, "evidence": ["policy_accuracy: '30日' contradicts '15日'"]})
        result = result.model_copy(update={"dimension_scores": scores, "passed": False, "hard_failures": [HardFailure(
            rule="policy_contradiction", dimension="factual_accuracy", sub_score="policy_accuracy",
            detail="'30日' (return) contradicts the knowledge ('15日')")]})
    return result


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    results = [_result("ret-ja-bad", 0.4, "ja-JP", "30日以内に返品できます。", hard=True)] + \
              [_result(f"ret-en-{i}", 0.95, "en-US", "Within 15 days.") for i in range(5)]
    dataset = out / "golden.jsonl"
    dataset.write_text(json.dumps({"test_id": "ret-ja-bad", "expected_facts": ["商品到着後15日以内"]},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.json").write_text(build_report(results, RUBRIC, run_id="r", dataset=str(dataset)).model_dump_json())
    (out / "results.jsonl").write_text(results_to_jsonl(results), encoding="utf-8")
    return write_run_page(out, history=out / "none")


def _dom(page: Path, fragment: str = "") -> str:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
                           "--dump-dom", page.as_uri() + fragment], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _rows(dom: str) -> list[str]:
    body = re.search(r'<tbody id="rows">(.*?)</tbody>', dom, re.S).group(1)
    return re.findall(r'<tr data-id="([^"]+)"', body)


def test_the_page_loads_with_every_item_failing_first(page):
    dom = _dom(page)
    assert _rows(dom) == ["ret-ja-bad"] + [f"ret-en-{i}" for i in range(5)]
    assert "6 of 6 items" in dom and "1 item(s) with hard failures" in dom


def test_a_filter_narrows_the_table(page):
    assert _rows(_dom(page, "#filter=locale=en-US&status=passed")) == [f"ret-en-{i}" for i in range(5)]
    assert _rows(_dom(page, "#filter=status=hard")) == ["ret-ja-bad"]


def test_an_items_details_show_answer_expected_facts_and_evidence(page):
    pane = re.search(r'<aside class="pane" id="pane">(.*?)</aside>', _dom(page, "#item=ret-ja-bad"), re.S).group(1)
    assert "30日以内に返品できます。" in pane and "商品到着後15日以内" in pane
    assert "policy_contradiction" in pane and "policy_accuracy" in pane and 'lang="ja"' in pane
