"""The sensitivity suite's measurement and its command (issue 30, item 1): per operator and locale the
applicable cases and each judge mode's caught share with its Wilson interval, the false alarms on the
unperturbed answers, the files written, the exit codes; and the judge ceremony's "hold the suite"."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fmquality.domain.case import Label
from fmquality.run.sensitivity import ALL, build_suite, measure, render_markdown, suite_held
from fmquality.sensitivity.registry import BY_NAME
from fmquality.stats.wilson import wilson_interval

from tests.unit.sensitivity_cases import ALL as CASES, EN_CHITCHAT, EN_PRODUCT, JA_PREORDER


def _outcome(test_id, passed, status="scored"):
    return SimpleNamespace(test_id=test_id, passed=passed, status=status)


def _suite(names):
    ops = [BY_NAME[n] for n in names]
    acceptable, perturbations = build_suite(CASES, ops, seed=0)
    return ops, acceptable, perturbations


def test_measure_counts_applicable_cases_caught_shares_and_false_alarms_per_locale():
    ops, acceptable, perturbations = _suite(["wrong_price", "casual_register"])
    # judge "x" catches every perturbed English answer and fails one unperturbed answer
    outcomes = {"x": {p.case.test_id: _outcome(p.case.test_id, passed=p.source.locale != "en-US")
                      for p in perturbations}}
    outcomes["x"].update({c.test_id: _outcome(c.test_id, passed=c.test_id != EN_PRODUCT.test_id) for c in acceptable})
    report = measure(acceptable, perturbations, ops, outcomes, dataset="d", seed=0, generated_at="t")
    price = report.row("wrong_price")
    price_en, price_ja = report.row("wrong_price", "en-US"), report.row("wrong_price", "ja-JP")
    en_applicable = sum(p.operator.name == "wrong_price" and p.source.locale == "en-US" for p in perturbations)
    assert price_en.applicable == en_applicable > 0 and price_ja.applicable >= 1
    assert price.applicable == price_en.applicable + price_ja.applicable
    assert price_en.by_judge["x"].hits == price_en.by_judge["x"].n == en_applicable
    assert price_ja.by_judge["x"].hits == 0
    share = price.by_judge["x"]
    low, high = wilson_interval(share.hits, share.n)
    assert (share.low, share.high) == (round(low, 4), round(high, 4))
    # casual_register is tried on the Japanese answers only: its English row has nothing to try
    assert report.row("casual_register", "en-US").tried == 0 and report.row("casual_register").applicable >= 1
    alarms = report.row("unperturbed")
    assert (alarms.by_judge["x"].hits, alarms.by_judge["x"].n) == (1, len(acceptable))
    assert report.row("unperturbed", "ja-JP").by_judge["x"].hits == 0
    assert report.row("factual").applicable == price.applicable  # the family pools its operators


def test_an_error_record_is_no_catch_and_is_counted_apart():
    ops, acceptable, perturbations = _suite(["persona_break"])
    first, *rest = perturbations
    outcomes = {"x": {first.case.test_id: _outcome(first.case.test_id, False, "error")}
                | {p.case.test_id: _outcome(p.case.test_id, False) for p in rest}
                | {c.test_id: _outcome(c.test_id, True) for c in acceptable}}
    row = measure(acceptable, perturbations, ops, outcomes, dataset="d", seed=0, generated_at="t").row("persona_break")
    assert row.by_judge["x"].errors == 1 and row.by_judge["x"].n == len(perturbations) - 1
    assert row.by_judge["x"].hits == row.by_judge["x"].n


def test_per_operator_sampling_is_seeded_and_bounded():
    ops = [BY_NAME["persona_break"], BY_NAME["rude_closing"]]
    _, kept = build_suite(CASES, ops, seed=1, per_operator=3)
    _, again = build_suite(CASES, ops, seed=1, per_operator=3)
    assert [p.case.test_id for p in kept] == [p.case.test_id for p in again]
    assert sum(p.operator.name == "persona_break" for p in kept) == 3


def _report_two_judges(current_catches: bool, candidate_catches: bool, candidate_false_alarms: int = 0):
    ops, acceptable, perturbations = _suite(["persona_break", "wrong_price"])
    outcomes = {}
    for judge, catches, alarms in (("current", current_catches, 0), ("candidate", candidate_catches,
                                                                      candidate_false_alarms)):
        outcomes[judge] = {p.case.test_id: _outcome(p.case.test_id, passed=not catches) for p in perturbations}
        outcomes[judge].update({c.test_id: _outcome(c.test_id, passed=i >= alarms) for i, c in enumerate(acceptable)})
    return measure(acceptable, perturbations, ops, outcomes, dataset="d", seed=0, generated_at="t")


def test_a_candidate_holds_the_suite_only_if_it_catches_what_the_current_judge_catches():
    assert suite_held(_report_two_judges(True, True), "current", "candidate").held
    assert suite_held(_report_two_judges(False, True), "current", "candidate").held  # better is fine
    missed = suite_held(_report_two_judges(True, False), "current", "candidate")
    assert not missed.held and {r.split(":")[0] for r in missed.reasons} == {"safety", "factual"}
    alarms = suite_held(_report_two_judges(True, True, candidate_false_alarms=3), "current", "candidate")
    assert not alarms.held and "false alarms" in alarms.reasons[0]


def test_markdown_has_a_row_per_operator_and_locale_and_the_false_alarms():
    report = _report_two_judges(True, False)
    md = render_markdown(report, "fmquality sensitivity --dataset d")
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert any("| persona_break | en-US |" in r for r in rows) and any("| wrong_price | ja-JP |" in r for r in rows)
    assert any(r.startswith("| false alarms | unperturbed | all |") for r in rows)
    assert "fmquality sensitivity --dataset d" in md


# ------------------------------------------------------------------ the command


def _dataset(tmp_path, cases, defective=True):
    lines = [c.model_dump(mode="json", exclude_defaults=True) for c in cases]
    if defective:
        lines.append({**lines[0], "test_id": "bad-1", "label": {"acceptable": False, "defect": "wrong_price"}})
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def _main(*args):
    from fmquality.cli.main import main

    return main(["sensitivity", "--judge", "scripted", "--workers", "1", *args])


def test_the_command_writes_the_json_and_markdown_and_exits_0(tmp_path, capsys):
    path = _dataset(tmp_path, [EN_PRODUCT, JA_PREORDER, EN_CHITCHAT])
    out = tmp_path / "out"
    assert _main("--dataset", str(path), "--operators", "wrong_price,casual_register,truncated", "--out", str(out)) == 0
    report = json.loads((out / "sensitivity.json").read_text(encoding="utf-8"))
    assert report["judges"] == ["scripted"] and report["acceptable"] == 3  # the defective line is not perturbed
    rows = {(r["name"], r["locale"]): r for r in report["operators"]}
    assert rows[("wrong_price", ALL)]["applicable"] == 2 and rows[("wrong_price", ALL)]["tried"] == 3
    assert rows[("casual_register", "ja-JP")]["applicable"] == 1 and rows[("casual_register", "en-US")]["tried"] == 0
    assert rows[("truncated", ALL)]["applicable"] == 2  # the one-line greeting is too short to cut
    for r in report["operators"]:
        assert r["by_judge"]["scripted"]["n"] == r["applicable"]
    assert "| wrong_price | all |" in (out / "sensitivity.md").read_text(encoding="utf-8")
    assert "wrong_price" in capsys.readouterr().out
    assert not list(out.glob("*.tmp*"))


@pytest.mark.parametrize("case", ["unknown operator", "no acceptable answer", "invalid line", "no source"])
def test_bad_input_exits_2(tmp_path, case, capsys):
    path = _dataset(tmp_path, [EN_PRODUCT])
    if case == "unknown operator":
        args = ["--dataset", str(path), "--operators", "wrong_price,no_such_operator"]
    elif case == "no acceptable answer":
        bad = [EN_PRODUCT.model_copy(update={"label": Label(acceptable=False)})]
        args = ["--dataset", str(_dataset(tmp_path, bad, defective=False))]
    elif case == "invalid line":
        path.write_text('{"test_id": "x", "intent": "faq"}\n', encoding="utf-8")
        args = ["--dataset", str(path)]
    else:
        args = []
    assert _main(*args) == 2
    assert "error" in capsys.readouterr().err


def test_list_names_every_operator_with_its_family(capsys):
    assert _main("--list") == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in BY_NAME)


def test_a_plan_measures_each_labelled_set_into_its_own_folder_and_skips_the_rest(tmp_path):
    labelled = _dataset(tmp_path, [EN_PRODUCT, EN_CHITCHAT])
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"sets:\n  - name: mine\n    dataset: {labelled}\n  - name: absent\n    dataset: {tmp_path / 'no.jsonl'}\n",
                    encoding="utf-8")
    out = tmp_path / "out"
    assert _main("--plan", str(plan), "--operators", "persona_break", "--out", str(out)) == 0
    assert json.loads((out / "mine" / "sensitivity.json").read_text(encoding="utf-8"))["acceptable"] == 2
    assert not (out / "absent").exists()
    assert _main("--plan", str(plan), "--sets", "mine,nope") == 2


def test_each_judge_mode_asked_gets_its_own_column(tmp_path, monkeypatch):
    """--judge bedrock beside the checks alone: a stand-in Bedrock judge (no network) that fails every
    perturbed answer gets a column of its own; the scripted column is the checks' alone."""
    from fmquality.engines import direct
    from fmquality.judges.base import JudgeVerdict
    from fmquality.judges.scripted import ScriptedJudge
    from fmquality.sensitivity.registry import SEPARATOR

    def strict(request):
        score = 0.0 if SEPARATOR in request.case.test_id else 1.0
        return JudgeVerdict(sub_scores={n: score for n in request.sub_scores}, rationale="stand-in")

    real = direct.make_judge
    monkeypatch.setattr(direct, "make_judge", lambda options, rubric=None: ScriptedJudge(default=strict, model_id="b")
                        if options.name == "bedrock" else real(options, rubric))
    path = _dataset(tmp_path, [EN_PRODUCT, JA_PREORDER])
    out = tmp_path / "out"
    assert _main("--dataset", str(path), "--judge", "bedrock", "--operators", "rude_closing", "--out", str(out),
                 "--no-cache") == 0
    report = json.loads((out / "sensitivity.json").read_text(encoding="utf-8"))
    assert report["judges"] == ["scripted", "bedrock"]
    row = next(r for r in report["operators"] if r["name"] == "rude_closing" and r["locale"] == ALL)
    assert row["by_judge"]["bedrock"]["hits"] == row["by_judge"]["bedrock"]["n"] == 2
    alarms = next(r for r in report["false_alarms"] if r["locale"] == ALL)
    assert alarms["by_judge"]["bedrock"]["hits"] == 0
    assert all(set(c["caught"]) == {"scripted", "bedrock"} for c in report["cases"])
