"""Review queue selection, export/import round trip (CSV and JSONL, with line-precise errors) and the
judge's agreement with the reviewers (the weighted kappa itself: test_stats.py)."""

import pytest

from fmquality.domain.scores import DimensionScore
from fmquality.domain.results import EvaluationResult
from fmquality.config.watch import ReviewSettings
from fmquality.adapters.review_queue import LocalReviewQueue
from fmquality.production.review import select_for_review
from fmquality.production.review_agreement import judge_agreement
from fmquality.production.review_exchange import apply_verdicts, export_text, parse_verdicts


def _result(i, passed, composite, confidence=0.9, intent="faq", locale="en-US"):
    dims = {d: DimensionScore(dimension=d, status="scored", score=composite, confidence=confidence)
            for d in ("relevance", "factual_accuracy", "consistency", "fluency")}
    return EvaluationResult(run_id="run1", test_id=f"t{i:03d}", intent=intent, locale=locale, status="scored",
                            passed=passed, composite_score=composite, threshold=0.7, rubric_version="v",
                            dimension_scores=dims, query="q", response="a")


RESULTS = ([_result(i, False, 0.4) for i in range(5)] + [_result(5, True, 0.9, confidence=0.3)]
           + [_result(6, True, 0.73)] + [_result(i, True, 0.95, locale="ja-JP") for i in range(7, 47)])


def test_selection_reasons_and_seeded_passing_share():
    items = select_for_review(RESULTS, ReviewSettings(passing_share=0.05, seed=1), "run1")
    reasons = [i.reason for i in items]
    assert reasons.count("failing") == 5 and reasons.count("low_confidence") == 1
    assert reasons.count("near_threshold") == 1 and reasons.count("random_pass") == 2
    again = select_for_review(RESULTS, ReviewSettings(passing_share=0.05, seed=1), "run1")
    assert [i.test_id for i in items] == [i.test_id for i in again]
    assert all(i.status == "pending" for i in items)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_round_trip_updates_queue_and_kappa(tmp_path, fmt):
    queue = LocalReviewQueue(tmp_path)
    queue.add(select_for_review(RESULTS, ReviewSettings(passing_share=0.05, seed=1), "run1"))
    text = export_text(queue.items(), fmt)
    if fmt == "csv":
        lines = text.splitlines()
        header = lines[0].split(",")
        ok, rel = header.index("acceptable"), header.index("relevance")
        filled = [lines[0]]
        for line in lines[1:]:
            cells = line.split(",")
            judge_pass = cells[header.index("judge_passed")] == "yes"
            cells[ok] = "yes" if judge_pass else "no"
            cells[rel] = "5" if judge_pass else "2"
            filled.append(",".join(cells))
        path = tmp_path / "verdicts.csv"
        path.write_text("\n".join(filled) + "\n", encoding="utf-8")
    else:
        import json
        rows = [json.loads(line) for line in text.splitlines()]
        for row in rows:
            row["acceptable"] = row["judge_passed"]
            row["relevance"] = "0.95" if row["judge_passed"] == "yes" else "0.3"
        path = tmp_path / "verdicts.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    verdicts, errors, blank = parse_verdicts(path)
    assert not errors and blank == 0
    updated, more = apply_verdicts(queue.items(), verdicts, str(path))
    assert not more
    queue.update(updated)
    agreement = judge_agreement(queue.items())
    assert agreement.reviewed == len(verdicts) and agreement.pending == 0
    assert agreement.subset("all").pass_fail.value == 1.0
    assert agreement.subset("all").dimensions["relevance"].value > 0.6  # binned levels nearly agree
    assert agreement.subset("locale:en-US") is not None


def test_import_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("run_id,test_id,acceptable,relevance,fluency\n"
                    "run1,t000,maybe,3,\n"
                    "run1,t001,yes,7,\n"
                    "run1,t002,yes,4,0.5\n"
                    "run1,t003,,,\n"
                    "run1,zzz,no,,\n", encoding="utf-8")
    verdicts, errors, blank = parse_verdicts(path)
    found = {(e.line, e.field) for e in errors}
    assert (2, "acceptable") in found and (3, "relevance") in found and (4, "fluency,relevance") in found
    assert blank == 1 and str(errors[0]).startswith(f"{path}:2: acceptable")
    queue_items = select_for_review(RESULTS, ReviewSettings(passing_share=0), "run1")
    _, more = apply_verdicts(queue_items, verdicts, str(path))
    assert [(e.line, e.field) for e in more] == [(6, "test_id")]
