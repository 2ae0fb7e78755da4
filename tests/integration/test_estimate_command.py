"""`fmquality estimate` and the run flags of issue 5 (--judge-mode, --cache-dir, --no-cache)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmquality.cli.main import main
from fmquality.run.dataset import load_dataset
from fmquality.run.evaluate import evaluate_cases
from fmquality.judges.bedrock.judge import BedrockJudge
from fmquality.config.pricing import cost_usd
from fmquality.judges.scripted import ScriptedJudge
from fmquality.config.rubric import load_rubric

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOOD = FIXTURES / "cli_good.jsonl"


@pytest.fixture(autouse=True)
def no_bedrock_calls(monkeypatch):
    def refuse(self):
        raise AssertionError("estimate must not call the judge")

    monkeypatch.setattr(BedrockJudge, "_client", refuse)


def run_estimate(capsys, *extra: str) -> dict:
    assert main(["estimate", "--dataset", str(GOOD), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_counts_the_calls_a_run_would_make(capsys):
    rubric = load_rubric()
    cases = load_dataset(GOOD).cases
    scripted = ScriptedJudge()
    evaluate_cases(cases, rubric, scripted, mode="per_dimension")  # what the run actually asks

    per_dimension = run_estimate(capsys)
    assert per_dimension["calls"] == len(scripted.calls)
    assert per_dimension["cases"] == len(cases) and per_dimension["calls_per_case"] <= 4
    assert sum(per_dimension["calls_by_dimension"].values()) == per_dimension["calls"]

    combined = run_estimate(capsys, "--judge-mode", "combined")
    assert combined["calls"] == len({test_id for test_id, _ in scripted.calls}) <= per_dimension["calls"]
    # A combined call's maxTokens grows with its dimensions: the upper bound sums the same budget.
    assert combined["max_output_tokens"] == per_dimension["max_output_tokens"]
    assert combined["calls_per_case"] <= 1
    assert combined["sub_scores_judged"] == per_dimension["sub_scores_judged"]


def test_estimate_prices_the_tokens_with_the_rubric_table(capsys):
    rubric = load_rubric()
    estimate = run_estimate(capsys)
    assert estimate["model_id"] == rubric.judge.model_id
    assert estimate["input_tokens"] > 0 and estimate["output_tokens"] > 0
    assert estimate["max_output_tokens"] == estimate["calls"] * rubric.judge.max_tokens
    from fmquality.run.estimate import RunEstimate

    usage = RunEstimate.model_validate(estimate).usage()
    price = rubric.judge.price_for(rubric.judge.model_id)
    assert estimate["usd_estimate"] == pytest.approx(cost_usd(usage, price), abs=1e-4)
    assert estimate["usd_upper_bound"] > estimate["usd_estimate"]

    unknown = run_estimate(capsys, "--judge-model-id", "anthropic.unpriced-model-v1:0")
    assert unknown["usd_estimate"] is None and unknown["calls"] == estimate["calls"]


def test_estimate_caches_by_the_rubric_table_of_the_chosen_model(capsys):
    rubric = load_rubric()
    pinned = run_estimate(capsys)
    assert pinned["min_cache_tokens"] == rubric.judge.min_cache_tokens_for(rubric.judge.model_id) == 4096
    assert pinned["smallest_prefix_tokens"] >= 4096 and pinned["cache_read_tokens"] > 0
    sonnet = run_estimate(capsys, "--judge-model-id", "eu.anthropic.claude-3-7-sonnet-20250219-v1:0")
    assert sonnet["min_cache_tokens"] == 1024
    unlisted = run_estimate(capsys, "--judge-model-id", "anthropic.unpriced-model-v1:0")
    assert unlisted["min_cache_tokens"] is None
    assert unlisted["cache_read_tokens"] == unlisted["cache_write_tokens"] == 0
    assert unlisted["input_tokens"] == pinned["input_tokens"] + pinned["cache_read_tokens"] + pinned["cache_write_tokens"]
    override = run_estimate(capsys, "--min-cache-tokens", str(pinned["smallest_prefix_tokens"] * 10))
    assert override["min_cache_tokens"] == pinned["smallest_prefix_tokens"] * 10
    assert override["cache_read_tokens"] == override["cache_write_tokens"] == 0

    assert main(["estimate", "--dataset", str(GOOD), "--judge-model-id", "anthropic.unpriced-model-v1:0"]) == 0
    assert "has no judge.min_cache_tokens entry in the rubric: not assumed" in capsys.readouterr().out


def test_estimate_text_output_and_bad_input(capsys, tmp_path):
    assert main(["estimate", "--dataset", str(GOOD)]) == 0
    text = capsys.readouterr().out
    assert "judge calls:" in text and "input tokens:" in text and "cost: ~$" in text
    assert "every static prefix is cached" in text
    assert "check them against the current Bedrock price list" in text

    assert main(["estimate", "--dataset", str(FIXTURES / "cli_invalid.jsonl")]) == 2
    assert main(["estimate", "--dataset", str(tmp_path / "missing.jsonl")]) == 2


def _usage(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))["judge_usage"]


def test_run_flags_judge_mode_and_verdict_cache(tmp_path, capsys):
    common = ["run", "--engine", "direct", "--dataset", str(GOOD), "--judge", "scripted", "--quiet",
              "--cache-dir", str(tmp_path / "cache")]
    assert main([*common, "--out", str(tmp_path / "a"), "--judge-mode", "combined"]) in (0, 1)
    first = _usage(tmp_path / "a")
    assert 0 < first["calls"] and first["calls_per_case"] <= 1 and first["cached_verdicts"] == 0
    assert first["usd_estimate"] == 0.0  # the scripted judge reports no tokens

    assert main([*common, "--out", str(tmp_path / "b"), "--judge-mode", "combined"]) in (0, 1)
    again = _usage(tmp_path / "b")
    assert again["calls"] == 0 and again["cached_verdicts"] == first["calls"]

    assert main([*common, "--out", str(tmp_path / "c"), "--judge-mode", "combined", "--no-cache"]) in (0, 1)
    assert _usage(tmp_path / "c")["calls"] == first["calls"]

    assert main([*common, "--out", str(tmp_path / "d"), "--judge-mode", "per_dimension"]) in (0, 1)
    assert _usage(tmp_path / "d")["calls"] > first["calls"]  # another prompt shape: new calls


def test_the_state_machine_runs_the_judge_mode_asked_for(tmp_path):
    for mode in ("combined", "per_dimension"):
        out = tmp_path / mode
        assert main(["run", "--engine", "stepfunctions-local", "--dataset", str(GOOD), "--judge-mode", mode,
                     "--out", str(out), "--quiet"]) == 0
        assert json.loads((out / "report.json").read_text(encoding="utf-8"))["judge_mode"] == mode
