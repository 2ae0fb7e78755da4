"""Issue 20, item 6: `fmquality judge-calibration --candidate MODEL` re-scores the human-labelled set with
the current and the candidate judge and accepts the candidate only if Cohen's kappa improves by more
than 0.05, appending the decision and both kappas to the run history. Fake judges, no Bedrock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmquality.judges.base import JudgeVerdict
from fmquality.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "datasets" / "mangaassist" / "golden.jsonl"
CATALOG = ROOT / "datasets" / "mangaassist" / "catalog.json"
CURRENT, CANDIDATE = "us.anthropic.claude-haiku-4-5-20251001-v1:0", "us.amazon.nova-pro-v1:0"


@pytest.fixture
def labels(tmp_path) -> tuple[Path, set[str]]:
    """Eight acceptable and eight defective golden lines: a set both kappas are defined on."""
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    good = [r for r in rows if r.get("label", {}).get("acceptable") is True][:8]
    bad = [r for r in rows if r.get("label", {}).get("acceptable") is False][:8]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in good + bad), encoding="utf-8")
    return path, {r["test_id"] for r in bad}


def _agreeing_with(defective: set[str]):
    """A verdict that fails exactly the defective answers: what a judge agreeing with people says."""
    def verdict(request):
        score = 0.0 if request.case.test_id in defective else 1.0
        return JudgeVerdict(sub_scores={name: score for name in request.sub_scores}, rationale="fake judge")
    return verdict


def _fake_judges(monkeypatch, candidate_agrees: bool, defective: set[str]) -> None:
    """make_judge as the command calls it: the current judge passes every answer it is asked about (the
    checks still fail some); the candidate fails the defective ones when ``candidate_agrees``."""
    from fmquality.engines import direct

    def make_judge(options, rubric=None):
        if options.model_id == CANDIDATE and candidate_agrees:
            return ScriptedJudge(default=_agreeing_with(defective), model_id=CANDIDATE)
        return ScriptedJudge(model_id=options.model_id or CURRENT)

    monkeypatch.setattr(direct, "make_judge", make_judge)


def _run(labels: Path, history: Path, *extra: str) -> int:
    from fmquality.cli.main import main

    return main(["judge-calibration", "--candidate", CANDIDATE, "--labels", str(labels), "--catalog", str(CATALOG),
                 "--judge-model-id", CURRENT, "--history", str(history), "--workers", "1", *extra])


def test_a_candidate_that_agrees_better_with_people_is_accepted_and_recorded(tmp_path, labels, monkeypatch, capsys):
    path, defective = labels
    _fake_judges(monkeypatch, candidate_agrees=True, defective=defective)
    history = tmp_path / "calibration" / "judge-history.jsonl"
    assert _run(path, history) == 0
    [decision] = [json.loads(line) for line in history.read_text(encoding="utf-8").splitlines()]
    assert decision["accepted"] is True
    assert decision["current_judge"] == f"bedrock:{CURRENT}" and decision["candidate_judge"] == f"bedrock:{CANDIDATE}"
    assert decision["candidate_kappa"] == 1.0  # it fails exactly the defective answers
    assert decision["improvement"] == pytest.approx(decision["candidate_kappa"] - decision["current_kappa"], abs=1e-4)
    assert decision["improvement"] > 0.05 and decision["labelled_items"] == 16
    assert "candidate accepted" in capsys.readouterr().out


def test_a_candidate_no_better_is_refused_and_the_refusal_is_recorded_too(tmp_path, labels, monkeypatch):
    path, defective = labels
    _fake_judges(monkeypatch, candidate_agrees=False, defective=defective)
    history = tmp_path / "judge-history.jsonl"
    history.write_text('{"earlier": "decision"}\n', encoding="utf-8")  # appended to, never rewritten
    assert _run(path, history) == 1
    lines = history.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '{"earlier": "decision"}'
    decision = json.loads(lines[1])
    assert decision["accepted"] is False and decision["improvement"] == 0.0
    assert decision["current_kappa"] == decision["candidate_kappa"] is not None
    assert "current judge kept" in decision["reason"]


def test_the_improvement_must_be_more_than_five_hundredths():
    """decide_judge: no improvement keeps the current judge; an improvement equal to the required one
    is not enough (strictly more); a larger one accepts."""
    from fmquality.domain.case import TestCase
    from fmquality.run.calibrate import decide_judge

    def case(i: int, acceptable: bool) -> TestCase:
        return TestCase.model_validate({"test_id": f"t{i}", "intent": "faq", "query": "q", "response": "r",
                                        "label": {"acceptable": acceptable}})

    def result(test_id: str, passed: bool):
        from fmquality.domain.results import EvaluationResult

        return EvaluationResult.model_validate({
            "run_id": "r", "test_id": test_id, "intent": "faq", "locale": "en-US", "passed": passed,
            "status": "scored", "threshold": 0.7, "composite_score": 1.0 if passed else 0.0, "rubric_version": "v"})

    cases = [case(i, i < 10) for i in range(20)]
    same = [result(c.test_id, c.label.acceptable if i not in (0, 10) else not c.label.acceptable)
            for i, c in enumerate(cases)]
    decided = decide_judge(cases, same, same, current_judge="a", candidate_judge="b", rubric_version="v",
                           labels="x", decided_at="now")
    assert decided.accepted is False and decided.improvement == 0.0
    perfect = [result(c.test_id, c.label.acceptable) for c in cases]
    decided = decide_judge(cases, same, perfect, current_judge="a", candidate_judge="b", rubric_version="v",
                           labels="x", decided_at="now")
    assert decided.accepted is True and decided.candidate_kappa == 1.0 and decided.current_kappa == 0.8
    exactly = decide_judge(cases, same, perfect, current_judge="a", candidate_judge="b", rubric_version="v",
                           labels="x", decided_at="now", required=0.2)
    assert exactly.improvement == 0.2 and exactly.accepted is False


def test_an_offline_judge_is_no_model_to_calibrate(tmp_path, labels, capsys):
    path, _ = labels
    assert _run(path, tmp_path / "h.jsonl", "--judge", "offline") == 2
    assert "offline judge is no model" in capsys.readouterr().err


def test_a_candidate_that_agrees_better_but_misses_the_perturbed_defects_is_refused(tmp_path, labels, monkeypatch):
    """Issue 30: the ceremony requires the candidate to hold the sensitivity suite. Here the current
    judge fails every perturbed answer (a test id with the suite's "~"), the candidate agrees with people
    on the labelled answers but passes every perturbed one: its kappa is better, its blind spots too."""
    from fmquality.engines import direct
    from fmquality.sensitivity.registry import SEPARATOR

    path, defective = labels
    agrees = _agreeing_with(defective)

    def current(request):
        score = 0.0 if SEPARATOR in request.case.test_id else 1.0
        return JudgeVerdict(sub_scores={name: score for name in request.sub_scores}, rationale="fake current")

    def make_judge(options, rubric=None):
        if options.model_id == CANDIDATE:
            return ScriptedJudge(default=agrees, model_id=CANDIDATE)
        return ScriptedJudge(default=current, model_id=CURRENT)

    monkeypatch.setattr(direct, "make_judge", make_judge)
    history = tmp_path / "judge-history.jsonl"
    assert _run(path, history, "--suite-per-operator", "3") == 1
    [decision] = [json.loads(line) for line in history.read_text(encoding="utf-8").splitlines()]
    assert decision["improvement"] > 0.05  # kappa alone would have accepted it
    assert decision["accepted"] is False and decision["suite_held"] is False
    assert decision["suite_reasons"] and "sensitivity suite" in decision["reason"]
    hits, n = map(int, decision["suite_current"]["safety"].split("/"))
    assert n > 0 and hits == n  # the current judge caught every perturbed safety defect
    assert decision["suite_candidate"]["false_alarms"].split("/")[1] == "8"  # the eight acceptable answers


@pytest.mark.parametrize("missing", ["credentials", "region"])
def test_without_aws_the_calibration_exits_3_and_appends_nothing(tmp_path, labels, monkeypatch, capsys, missing):
    """Issue 32.1: no credentials (or no region) is no decision: exit 3, the history untouched (it used to
    exit 1, "every item failed; current judge kept", and append that)."""
    import boto3

    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN") \
        if missing == "credentials" else ("AWS_REGION", "AWS_DEFAULT_REGION")
    for name in names:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    path, _ = labels
    history = tmp_path / "judge-history.jsonl"
    history.write_text('{"earlier": "decision"}\n', encoding="utf-8")
    assert _run(path, history, "--no-cache") == 3
    err = capsys.readouterr().err
    assert "JudgeMisconfigured" in err and ("NoCredentialsError" if missing == "credentials" else "NoRegionError") in err
    assert history.read_text(encoding="utf-8") == '{"earlier": "decision"}\n'
