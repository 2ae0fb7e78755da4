"""`fmquality calibrate` on a small rated and labelled fixture: --results mode against figures worked
out by hand, in-process scoring against a run's own output, and plans that skip missing sets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from fmquality.run.calibrate import load_plan
from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_PASSED
from fmquality.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]
DATASET = str(FIXTURES / "calibrate_rated.jsonl")
# Hand-written results of the fixture: ratings and scores chosen so every figure can be checked by
# hand; "chat-hello-ja-english" has no result, "not-in-the-dataset" matches no line.
RESULTS = str(FIXTURES / "calibrate_rated.results.jsonl")


def _calibrate(capsys, *args) -> tuple[int, dict | None, str]:
    code = main(["calibrate", *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == EXIT_PASSED else None, captured.err


def _pairs(report: dict) -> dict[tuple[str, str], dict]:
    return {(c["score"], c["human"]): c for s in report["sets"] for c in s["correlations"]}


def test_results_mode_gives_the_hand_computed_figures(capsys):
    code, report, err = _calibrate(capsys, "--dataset", DATASET, "--results", RESULTS, "--human", "human.quality",
                                   "--score", "composite", "--score", "factual_accuracy",
                                   "--score", "factual_accuracy.price_accuracy", "--score", "fluency")
    assert code == EXIT_PASSED
    assert "1 result(s)" in err and "match no line" in err
    (s,) = report["sets"]
    assert (s["name"], s["items"], s["missing_results"], s["results_file"]) == ("calibrate_rated", 6, 1, RESULTS)
    pairs = _pairs(report)
    # composite: faq-good .9/5, faq-stale .5/1, pq-wrong .85/2, ja-good .95/4 (pq-good unscored,
    # ja-english unrated). Ranks 3 1 2 4 and 4 1 2 3: sum d^2 = 2, rho = 1 - 12/60 = 0.8;
    # 5 of 6 pairs concordant: tau = (5 - 1)/6.
    composite = pairs[("composite", "human.quality")]
    assert (composite["n"], composite["unscored"], composite["unrated"]) == (4, 1, 1)
    assert composite["rho"] == 0.8 and composite["tau_b"] == pytest.approx(2 / 3, abs=1e-4)
    # factual_accuracy: 1/5, .3/1, 1/4.5, .6/2, .9/4 (a tie in the scores): rho = 9.5/sqrt(95);
    # 9 pairs concordant, 1 tied in x: tau-b = 9 / sqrt(9 * 10).
    factual = pairs[("factual_accuracy", "human.quality")]
    assert (factual["n"], factual["unscored"], factual["unrated"]) == (5, 0, 1)
    assert factual["rho"] == pytest.approx(9.5 / math.sqrt(95), abs=1e-4)
    assert factual["tau_b"] == pytest.approx(9 / math.sqrt(90), abs=1e-4)
    # price_accuracy applies to the two product questions only.
    price = pairs[("factual_accuracy.price_accuracy", "human.quality")]
    assert (price["n"], price["not_applicable"], price["unrated"], price["rho"], price["tau_b"]) == (2, 3, 1, 1.0, 1.0)
    fluency = pairs[("fluency", "human.quality")]
    assert (fluency["n"], fluency["unscored"], fluency["unrated"]) == (4, 1, 1)
    # Verdicts: PA 2, PD 1, FA 1 (the unscored item fails), FD 1: p_o = 3/5, p_e = 13/25, kappa = 1/6.
    cal = s["calibration"]
    assert cal["kappa"]["value"] == pytest.approx(1 / 6, abs=1e-4) and cal["kappa"]["n"] == 5
    assert (cal["acceptable_failed"], cal["acceptable"], cal["defective_passed"], cal["defective"]) == (1, 3, 1, 2)
    assert cal["kappa_by_intent"]["faq"]["value"] == 1.0
    assert cal["kappa_by_intent"]["product_question"]["value"] == -1.0
    assert cal["kappa_by_intent"]["chitchat"]["undefined_reason"] == "every item passed"
    assert cal["kappa_by_locale"]["en-US"]["value"] == 0.0


def test_labels_and_ratings_come_from_the_dataset_not_the_results(tmp_path, capsys):
    flipped = tmp_path / "results.jsonl"
    lines = [json.loads(x) for x in Path(RESULTS).read_text().splitlines()]
    flipped.write_text("".join(json.dumps({**r, "label": {"acceptable": not r["label"]["acceptable"]}}) + "\n"
                               for r in lines))
    _, report, _ = _calibrate(capsys, "--dataset", DATASET, "--results", str(flipped))
    assert report["sets"][0]["calibration"]["kappa"]["value"] == pytest.approx(1 / 6, abs=1e-4)
    assert report["sets"][0]["correlations"] == []  # no --human: kappa and rates only


def test_scoring_in_process_agrees_with_reading_the_runs_results(tmp_path, capsys):
    """Without --results the dataset is scored by the direct engine, so the figures must equal those
    computed from `fmquality run --engine direct`'s results.jsonl of the same data."""
    out = tmp_path / "run"
    main(["run", "--engine", "direct", "--dataset", DATASET, "--out", str(out), "--quiet"])
    capsys.readouterr()
    common = ["--dataset", DATASET, "--human", "human.quality", "--human", "human.fluent"]
    code, scored, _ = _calibrate(capsys, *common)
    assert code == EXIT_PASSED
    _, read, _ = _calibrate(capsys, *common, "--results", str(out / "results.jsonl"))
    assert scored["sets"][0]["correlations"] == read["sets"][0]["correlations"]
    assert scored["sets"][0]["calibration"] == read["sets"][0]["calibration"]
    pairs = _pairs(scored)
    # Default scores: every dimension and the composite, for each rating; nothing left out unexplained.
    assert {score for score, _ in pairs} == {"relevance", "factual_accuracy", "consistency", "fluency", "safety",
                                             "composite"}
    for (_, human), pair in pairs.items():
        assert pair["n"] + pair["unscored"] + pair["not_applicable"] + pair["unrated"] == 6
        assert pair["unrated"] == (1 if human == "human.quality" else 2)
    report = json.loads((out / "report.json").read_text())
    assert scored["sets"][0]["calibration"]["kappa"] == report["calibration"]["kappa"]


def test_out_writes_json_and_the_html_section_and_prints_a_table(tmp_path, capsys):
    out = tmp_path / "cal"
    code = main(["calibrate", "--dataset", DATASET, "--results", RESULTS, "--human", "human.quality",
                 "--score", "composite", "--out", str(out)])
    assert code == EXIT_PASSED
    text = capsys.readouterr().out
    assert "composite ~ human.quality" in text and "0.800" in text and "0.667" in text
    assert "passed ~ label.acceptable" in text and "1/3 (33.3%)" in text and "intent product_question" in text
    assert json.loads((out / "calibration.json").read_text())["sets"][0]["name"] == "calibrate_rated"
    html = (out / "calibration.html").read_text()
    assert "Agreement with the human labels" in html and "human.quality" in html and "0.800" in html
    assert "http" not in html  # one self-contained file


def _plan(tmp_path, text: str) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    return plan


def test_plan_skips_a_missing_set_and_reads_paths_from_variables(tmp_path, capsys, monkeypatch):
    plan = _plan(tmp_path, """
vars: {FIXTURES_DIR: /nowhere}
sets:
  - name: rated
    dataset: ${FIXTURES_DIR}/calibrate_rated.jsonl
    pairs: [{score: factual_accuracy, human: human.quality}, {score: composite, human: human.fluent, info: true}]
  - name: not-written-yet
    dataset: does-not-exist.jsonl
""")
    monkeypatch.setenv("FIXTURES_DIR", str(FIXTURES))
    code, report, err = _calibrate(capsys, "--plan", str(plan), "--judge", "scripted")
    assert code == EXIT_PASSED
    assert "skipped not-written-yet:" in err and "does-not-exist.jsonl not found" in err
    rated, missing = report["sets"]
    assert [(c["score"], c["human"], c["info"]) for c in rated["correlations"]] == [
        ("factual_accuracy", "human.quality", False), ("composite", "human.fluent", True)]
    assert rated["judge"] == "scripted" and rated["calibration"]["labelled"] == 6
    assert missing == {**missing, "skipped": "dataset not found", "correlations": [], "calibration": None}
    main(["calibrate", "--plan", str(plan), "--judge", "scripted"])
    text = capsys.readouterr().out
    assert "skipped: dataset not found" in text and "composite ~ human.fluent (info)" in text


@pytest.mark.parametrize("args, message", [
    (["--plan", "missing-plan.yaml"], "cannot read the calibration plan"),
    (["--dataset", DATASET, "--score", "fluency.spelling"], "unknown score 'fluency.spelling'"),
    (["--dataset", DATASET, "--results", "missing-results.jsonl"], "cannot read results"),
    (["--dataset", "missing.jsonl"], "cannot read dataset"),
])
def test_bad_input_exits_2_and_says_why(capsys, args, message):
    assert main(["calibrate", *args]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_bad_plans_exit_2(tmp_path, capsys):
    unknown_var = _plan(tmp_path, "sets: [{name: a, dataset: '${NOT_SET_ANYWHERE}/x.jsonl'}]\n")
    assert main(["calibrate", "--plan", str(unknown_var)]) == EXIT_BAD_INPUT
    assert "NOT_SET_ANYWHERE" in capsys.readouterr().err
    bad_score = _plan(tmp_path, "sets: [{name: a, dataset: x.jsonl, pairs: [{score: tone, human: h}]}]\n")
    assert main(["calibrate", "--plan", str(bad_score)]) == EXIT_BAD_INPUT
    assert "unknown score 'tone'" in capsys.readouterr().err
    good = _plan(tmp_path, f"sets: [{{name: a, dataset: {DATASET}}}]\n")
    assert main(["calibrate", "--plan", str(good), "--human", "human.quality"]) == EXIT_BAD_INPUT
    assert "a plan names its own pairs" in capsys.readouterr().err


def test_the_shipped_plan_resolves_against_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("FMQ_PUBLIC_DEV_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    plan = load_plan(REPO / "datasets" / "calibration.yaml")
    sets = {s.name: s for s in plan.sets}
    assert {"golden", "paraphrase", "blind_dev", "qags_cnndm", "sfhot", "sfres"} <= set(sets)
    assert plan.path(sets["golden"].dataset) == REPO / "datasets" / "mangaassist" / "golden.jsonl"
    assert plan.path(sets["sfhot"].dataset) == REPO.parent / "shared" / "data" / "public-dev" / "sfhot.jsonl"
    monkeypatch.delenv("FMQ_BLIND_DEV_DIR", raising=False)
    assert plan.path(sets["blind_dev"].dataset) == REPO.parent / "shared" / "data" / "blind-dev" / "dev.jsonl"
    assert plan.agreement_sets == ["paraphrase", "blind_dev"]
    assert ("factual_accuracy", "human.consistency") in {(p.score, p.human) for p in sets["qags_cnndm"].pairs}
    monkeypatch.setenv("FMQ_PUBLIC_DEV_DIR", "elsewhere")  # relative: read from the current folder
    assert plan.path(sets["sfres"].dataset).resolve() == tmp_path.resolve() / "elsewhere" / "sfres.jsonl"


# --------------------------------------------------------------------------------------------------
# Checks, threshold fit and signal agreement
# --------------------------------------------------------------------------------------------------


def test_checks_fit_and_signals_from_a_results_file(tmp_path, capsys):
    """The fixture's results against the shipped rubric's thresholds (faq .85, product_question .80,
    chitchat .70), the rubric given as a copy that must stay untouched."""
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text((REPO / "datasets" / "rubrics" / "mangaassist-v3.yaml").read_text(encoding="utf-8"))
    before = rubric.read_bytes()
    out, signals = tmp_path / "cal", tmp_path / "agreement" / "signals.yaml"
    code, report, _ = _calibrate(capsys, "--dataset", DATASET, "--results", RESULTS, "--rubric", str(rubric),
                                 "--fit", "--signals-out", str(signals), "--out", str(out))
    assert code == EXIT_PASSED
    # No sub-score of the hand-written results is judged, so every one below 1.0 is a check's:
    # fact_coverage fired on chat-hello-ja-good (acceptable, .9) and faq-returns-stale (defective, .3),
    # price_accuracy on pq-uzumaki-wrong-price (defective); chat-hello-ja-english has no result.
    checks = report["checks"]
    assert checks["sets"] == ["calibrate_rated"]
    assert [(r["check"], r["flagged"], r["by_set"]["calibrate_rated"]) for r in checks["rows"]] == [
        ("factual_accuracy.fact_coverage", True, {"fired_acceptable": 1, "acceptable": 3, "fired_defective": 1, "defective": 2}),
        ("factual_accuracy.price_accuracy", False, {"fired_acceptable": 0, "acceptable": 3, "fired_defective": 1, "defective": 2}),
    ]
    fit = report["fit"]
    assert (fit["target_fpr"], fit["sets"], fit["rubric"]) == (0.05, ["calibrate_rated"], str(rubric))
    rows = {r["name"]: r for r in fit["intents"]}
    # faq: acceptable .90, defective .50: the highest threshold keeping the acceptable one is .90.
    assert (rows["faq"]["current"], rows["faq"]["proposed"], rows["faq"]["acceptable_failed_proposed"]) == (0.85, 0.9, 0)
    # product_question: the one acceptable item is unscored (fails whatever the threshold): no acceptable
    # composite says where the bar should be, so the threshold stays.
    pq = rows["product_question"]
    assert (pq["proposed"], pq["changed"], pq["fixed_failures"], pq["defective_passed_now"]) == (0.8, False, 1, 1)
    assert pq["note"] == "every acceptable item fails whatever the threshold (1 fixed failure(s)): threshold kept"
    assert (rows["chitchat"]["current"], rows["chitchat"]["proposed"]) == (0.7, 0.95)
    diff = (out / "threshold-fit.diff").read_text()
    assert diff == fit["diff"] and diff.startswith(f"--- a/{rubric}\n")
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert [line.split(":")[0] for line in added] == ["+  faq", "+  chitchat"]
    assert [line.rsplit("threshold: ", 1)[1] for line in added] == ["0.90}", "0.95}"]
    assert rubric.read_bytes() == before  # never written
    assert report["signals"] == {"judge": "unknown", "measured_on": ["calibrate_rated"], "signals": {}}
    assert yaml.safe_load(signals.read_text()) == {"judge": "unknown", "measured_on": ["calibrate_rated"],
                                                   "signals": {}}
    # The hand-written results carry no answers: no similarity to measure, so no semantic scale.
    assert not signals.with_name("semantic_scale.yaml").exists()
    html = (out / "calibration.html").read_text()
    assert "Checks on the labelled answers" in html and 'class="flagged"' in html and "Threshold fit" in html
    assert "threshold: 0.95}" in html
    assert json.loads((out / "calibration.json").read_text())["fit"]["diff"] == diff

    main(["calibrate", "--dataset", DATASET, "--results", RESULTS, "--rubric", str(rubric), "--fit"])
    text = capsys.readouterr().out
    flagged = next(line for line in text.splitlines() if "factual_accuracy.fact_coverage" in line)
    assert "!" in flagged and "1/3" in flagged and "1/2" in flagged
    assert "Threshold fit" in text and f"proposed edit of {rubric} (not applied)" in text and added[0] in text
    assert not (Path.cwd() / "threshold-fit.diff").exists()


def test_plan_fit_sets_and_agreement_sets_choose_the_sets(tmp_path, capsys):
    plan = _plan(tmp_path, f"""
agreement_sets: [b, missing]
sets:
  - {{name: a, dataset: {DATASET}}}
  - {{name: b, dataset: {DATASET}}}
  - {{name: missing, dataset: {tmp_path / "nope.jsonl"}}}
""")
    signals = tmp_path / "signals.yaml"
    code, report, err = _calibrate(capsys, "--plan", str(plan), "--fit", "--fit-sets", "a,missing",
                                   "--target-fpr", "0.5", "--signals-out", str(signals))
    assert code == EXIT_PASSED
    assert "--fit-sets missing: not measured" in err and "agreement set missing: not measured" in err
    assert report["fit"]["sets"] == ["a"] and report["fit"]["target_fpr"] == 0.5
    assert report["fit"]["overall"]["acceptable"] == 3  # one copy of the data set, not two
    # The same data scored twice (offline judge, deterministic): the same checks fire in both sets.
    checks = report["checks"]
    assert checks["sets"] == ["a", "b"]
    assert all(row["by_set"]["a"] == row["by_set"]["b"] for row in checks["rows"])
    agreement = report["signals"]
    assert agreement["measured_on"] == ["b"] and agreement["signals"]
    for value in agreement["signals"].values():
        assert value["acceptable"] <= 3 and value["defective"] <= 3  # one set of 3 + 3, not both
        assert value["weight"] == 0.0  # fewer than 10 answers a side
    written = yaml.safe_load(signals.read_text())
    assert written == {"judge": agreement["judge"], "measured_on": ["b"], "signals": agreement["signals"]}
    assert f"--plan {plan} --signals-out {signals}" in signals.read_text()


@pytest.mark.parametrize("args, message", [
    (["--fit", "--fit-sets", "nope"], "unknown set(s) ['nope']"),
    (["--target-fpr", "0.1"], "apply with --fit"),
    (["--fit-sets", "calibrate_rated"], "apply with --fit"),
    (["--fit", "--target-fpr", "1.5"], "must lie in [0, 1)"),
])
def test_bad_fit_options_exit_2(capsys, args, message):
    assert main(["calibrate", "--dataset", DATASET, "--results", RESULTS, *args]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err
