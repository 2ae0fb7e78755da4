"""report.html as a page to review in: every item embedded (passing ones too) with its dimensions,
sub-scores, evidence, hard failures, expected facts and reference; text that cannot break out of the
page; the paired views separated; labels judged only against the answers they were written for; the
user's own paths; a trend from earlier runs' report.json files; bounded size per item."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.results import Generation
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.report.build import build_report, results_to_jsonl
from fmquality.report.charts import paired_chart_svg, text_width
from fmquality.report.html import render_html
from fmquality.report.page import paired_groups, write_run_page
from fmquality.report.page_items import MAX_ANSWER, MAX_LINE, MAX_LINES, item_record
from fmquality.run.summary import summarize
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.scoring.composite import combine

RUBRIC = load_rubric()
BREAKOUT = "</script><script>alert(1)</script> & <b>bold</b>"


def _result(test_id: str, score: float, *, intent: str = "faq", locale: str = "en-US", answer: str = "Within 15 days.",
            hard: bool = False, label: dict | None = None, generated_by: str | None = None, tags=("policy",)):
    case = TestCase(test_id=test_id, intent=intent, locale=locale, query=f"Returns? {test_id}", response=answer,
                    tags=list(tags), label=label)
    plain = {d: DimensionScore(dimension=d, status="scored", score=score) for d in DIMENSIONS}
    result = combine(case, RUBRIC, plain)
    # The sub-scores and evidence a reviewer reads (the composite above comes from the dimension scores).
    detailed = {d: s.model_copy(update={
        "sub_scores": {"fact_coverage": score, "price_accuracy": 1.0}, "judged": ["fact_coverage"],
        "weights": {"fact_coverage": 0.2},
        "evidence": [f"fact_coverage: '15 days': {'conveyed' if score > 0.5 else 'not found'}",
                     "fact_coverage: judge: fact_coverage=0.10 (offline judge)",
                     "price_accuracy: $9.99 = catalog price of Uzumaki"]}) for d, s in plain.items()}
    hard_failures = [HardFailure(rule="policy_contradiction", dimension="factual_accuracy", sub_score="policy_accuracy",
                                 detail="'30 days' (return) contradicts the knowledge ('15 days')")] if hard else []
    result = result.model_copy(update={"dimension_scores": detailed, "hard_failures": hard_failures,
                                       "passed": result.passed and not hard})
    if generated_by:
        result = result.model_copy(update={"generation": Generation(target_id=generated_by, target_kind="python",
                                                                    response=answer)})
    return result


def _embedded(page: str, element_id: str) -> list | dict:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', page, re.S)
    assert match, element_id
    assert "<" not in match.group(1)  # nothing in the data can close its script element
    return json.loads(match.group(1))


def test_every_item_is_embedded_with_its_dimensions_and_text_cannot_break_out():
    results = [_result("faq-good", 0.95), _result("faq-bad", 0.3, answer=BREAKOUT, hard=True)]
    report = build_report(results, RUBRIC, run_id="r", dataset="d.jsonl")
    page = render_html(report, results, RUBRIC.gate.min_pass_rate)
    assert page.count("<script>") == 1  # the page's own script; the data is in JSON script elements
    items = {i["id"]: i for i in _embedded(page, "fmq-items")}
    assert set(items) == {"faq-good", "faq-bad"}  # passing items too
    assert items["faq-good"]["status"] == "passed" and items["faq-bad"]["status"] == "failed"
    assert items["faq-bad"]["answer"] == BREAKOUT  # intact once parsed, inert in the page
    assert "<script>alert(1)" not in page
    assert set(items["faq-good"]["dims"]) == set(DIMENSIONS)
    assert items["faq-bad"]["hard"][0]["rule"] == "policy_contradiction"
    coverage = items["faq-bad"]["detail"]["factual_accuracy"]["subs"][0]
    # [name, score, source, weight, evidence]: the restated judged value is left out, the rest kept.
    assert coverage[:4] == ["fact_coverage", 0.3, "judge", 0.2] and coverage[4] == ["'15 days': not found"]
    assert 'lang="en"' in page and "Hiragino Sans" in page and "Noto Sans CJK JP" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched


def test_records_are_bounded_whatever_the_answer_length():
    long = _result("faq-long", 0.3, answer="長い答え。" * 20_000)
    long.dimension_scores["fluency"].evidence[:] = [f"fact_coverage: line {i} " + "x" * 5_000 for i in range(500)]
    record = item_record(long)
    assert len(record["answer"]) <= MAX_ANSWER and record["answer"].endswith("…")
    evidence = record["detail"]["fluency"]["subs"][0][4]
    assert len(evidence) == MAX_LINES + 1 and evidence[-1].startswith("… 484 more")
    assert all(len(line) <= MAX_LINE for line in evidence)
    assert len(json.dumps(record, ensure_ascii=False)) < 40_000


def test_a_summary_record_says_its_detail_is_in_results_jsonl():
    record = item_record(summarize(_result("faq-bad", 0.3, hard=True)))
    assert record["detail"] is None and record["hard"][0]["rule"] == "policy_contradiction"
    assert record["dims"]["fluency"] == 0.3


def _paired_arms():
    candidate = [_result("new-fail", 0.3), _result("fixed", 0.95), _result("both-fail", 0.3), _result("both-pass", 0.95)]
    control = [_result("new-fail", 0.95), _result("fixed", 0.3), _result("both-fail", 0.2), _result("both-pass", 0.95)]
    return candidate, control


def test_paired_runs_separate_new_failures_fixed_and_failing_in_both():
    candidate, control = _paired_arms()
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d.jsonl", control_results=control)
    groups = paired_groups(report)
    assert [[i.test_id for i in groups[k]] for k in ("new", "fixed", "both")] == [["new-fail"], ["fixed"], ["both-fail"]]
    page = render_html(report, candidate, RUBRIC.gate.min_pass_rate, control_results=control)
    assert "New failures: fail in the candidate, pass in the control (1)" in page
    assert "Fixed: pass in the candidate, fail in the control (1)" in page and "Failing in both arms (1)" in page
    control_items = {c["id"]: c for c in _embedded(page, "fmq-control")}
    assert control_items["new-fail"]["status"] == "passed"
    assert _embedded(page, "fmq-report")["paired"]["new-fail"][:2] == [False, True]


def test_paired_chart_labels_fit_their_column_and_axis_values_do_not_overlap():
    long_tag = ("a-very-long-tag-name-for-the-regression-suite-of-returns", "返品ポリシーの長いタグ名")
    candidate = [_result(f"c{i}", 0.3 + i / 40, tags=long_tag) for i in range(RUBRIC.gate.paired.min_pairs)]
    control = [_result(f"c{i}", 0.9, tags=long_tag) for i in range(RUBRIC.gate.paired.min_pairs)]
    report = build_report(candidate, RUBRIC, run_id="r", dataset="d.jsonl", control_results=control)
    assert {f"tag:{t}" for t in long_tag} <= {s.subset for s in report.paired.subsets}
    svg = paired_chart_svg(report.paired)
    for x, text in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end" font-size="12">([^<]+)</text>', svg):
        assert float(x) - text_width(text) >= 0, text  # right-aligned label starts inside the picture
    width = float(re.search(r'width="(\d+)"', svg).group(1))
    for x, text in re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="12">([^<]+)</text>', svg):
        assert float(x) + text_width(text) <= width, text
    ticks = sorted(float(x) for x in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" font-size="11"', svg))
    assert all(b - a >= 56 for a, b in zip(ticks, ticks[1:]))


def test_labels_are_compared_only_with_the_answers_they_were_written_for():
    labelled = {"acceptable": True}
    recorded = [_result(f"faq-{i}", 0.95, label=labelled) for i in range(3)]
    assert build_report(recorded, RUBRIC, run_id="r", dataset="d").calibration.labelled == 3
    generated = [_result(f"faq-{i}", 0.3, label=labelled, generated_by="python:bot") for i in range(3)]
    report = build_report(generated, RUBRIC, run_id="r", dataset="d", target={"kind": "python", "spec": "python:bot"})
    assert report.calibration is None
    page = render_html(report, generated)
    assert "Not compared: this run scored answers generated by python:bot" in page
    assert "Agreement with the human labels" not in page


def _run_folder(tmp_path: Path, run_id: str, results, *, finished: str, dataset: str) -> Path:
    out = tmp_path / "runs" / run_id
    out.mkdir(parents=True)
    report = build_report(results, RUBRIC, run_id=run_id, dataset=dataset, finished_at=finished,
                          started_at=finished)
    (out / "report.json").write_text(report.model_dump_json(), encoding="utf-8")
    (out / "results.jsonl").write_text(results_to_jsonl(results), encoding="utf-8")
    return out


def test_a_run_folder_page_has_the_dataset_side_local_paths_and_a_trend(tmp_path):
    dataset = tmp_path / "golden.jsonl"
    dataset.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in [
        {"test_id": "ret-ja", "intent": "return_request", "locale": "ja-JP", "query": "返品できますか？",
         "expected_facts": ["商品到着後15日以内"], "reference_response": "商品到着後15日以内であれば返品できます。",
         "conversation_history": [{"role": "user", "content": "こんにちは"}]},
        {"test_id": "not-in-run", "intent": "faq", "query": "?", "expected_facts": ["x"]}]), encoding="utf-8")
    uploaded = "s3://fmquality-local-data/datasets/golden.jsonl"
    for day, rate in (("01", 0.2), ("02", 0.9)):  # earlier runs of the same dataset
        _run_folder(tmp_path, f"old-{day}", [_result("ret-ja", rate)], finished=f"2026-01-{day}T00:00:00", dataset=uploaded)
    _run_folder(tmp_path, "other-set", [_result("x", 0.9)], finished="2026-01-03T00:00:00", dataset="paraphrase.jsonl")
    out = _run_folder(tmp_path, "now", [_result("ret-ja", 0.3, intent="return_request", locale="ja-JP",
                                                answer="30日以内に返品できます。", hard=True)],
                      finished="2026-01-04T00:00:00", dataset=uploaded)
    page = write_run_page(out, dataset=dataset).read_text(encoding="utf-8")
    assert f"dataset {dataset}" in page and "s3://fmquality-local-data" not in page.split("<script")[0]
    cases = _embedded(page, "fmq-cases")
    assert [c["id"] for c in cases] == ["ret-ja"]  # only the run's items
    assert cases[0]["facts"] == ["商品到着後15日以内"] and cases[0]["reference"].startswith("商品到着後15日以内")
    assert cases[0]["history"] == [{"role": "user", "content": "こんにちは"}]
    assert _embedded(page, "fmq-items")[0]["answer"] == "30日以内に返品できます。"
    trend = re.findall(r"<title>([^<]+?) \(", page)
    assert trend[::2] == ["old-01", "old-02", "now"]  # oldest first, the other dataset's run left out
    assert 'aria-label="pass rate and mean composite over the last 3 runs"' in page


def test_a_first_run_page_says_where_a_trend_would_come_from(tmp_path):
    out = _run_folder(tmp_path, "only", [_result("faq-1", 0.9)], finished="2026-01-01T00:00:00", dataset="d.jsonl")
    page = write_run_page(out, history=tmp_path / "nowhere").read_text(encoding="utf-8")
    assert "No earlier run found" in page and "a --history folder" in page
