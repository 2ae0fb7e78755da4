"""Combined judging on embedded AWS (issue 19): the real ASL, with a rubric whose judge.mode is
combined, runs every item through ONE ScoreCase call, asks a counting stand-in for Bedrock exactly once
per case that needs the judge, and gives the same item results as the direct engine in combined mode."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from fmquality.cli.main import main
from fmquality.engines.local import run_local_execution

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "datasets" / "mangaassist" / "golden.jsonl"
CATALOG = REPO / "datasets" / "mangaassist" / "catalog.json"
RUBRIC = REPO / "datasets" / "rubrics" / "mangaassist-v3.yaml"
FAST = {"retry_wait_cap_s": 0.01}


class JudgeCalls:
    """Requests to the stand-in judge, by kind; the handlers may run on several threads."""

    def __init__(self) -> None:
        self.per_dimension = 0
        self.combined = 0
        self._lock = threading.Lock()
        self.inside_combined = threading.local()

    def count(self, kind: str) -> None:
        with self._lock:
            setattr(self, kind, getattr(self, kind) + 1)


@pytest.fixture
def counted(monkeypatch) -> JudgeCalls:
    """The "bedrock" judge replaced by the offline judge that counts its requests and reports each as
    one call, as Bedrock does (the offline judge itself is free: 0 calls). Both engines build the judge
    through the factory; the handlers and the direct engine put the verdict cache around it."""
    from fmquality.judges import factory
    from fmquality.judges.offline import OfflineJudge

    calls = JudgeCalls()

    class CountingJudge(OfflineJudge):
        model_id = "stand-in-model"

        def judge(self, request, rubric):
            if not getattr(calls.inside_combined, "active", False):  # the offline judge answers a
                calls.count("per_dimension")                         # combined request per dimension
            return super().judge(request, rubric).model_copy(update={"calls": 1})

        def judge_combined(self, request, rubric):
            calls.count("combined")
            calls.inside_combined.active = True
            try:
                return super().judge_combined(request, rubric).model_copy(update={"calls": 1})
            finally:
                calls.inside_combined.active = False

    real = factory.make_judge
    monkeypatch.setattr(factory, "make_judge",
                        lambda name, *a, **k: CountingJudge() if name == "bedrock" else real(name, *a, **k))
    return calls


@pytest.fixture
def inputs(tmp_path) -> tuple[Path, Path]:
    """The first golden case of each intent (both locales among them), and the shipped rubric with
    judge.mode: combined."""
    lines, intents = [], set()
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        intent = json.loads(line)["intent"]
        if intent not in intents:
            intents.add(intent)
            lines.append(line)
    dataset = tmp_path / "one-per-intent.jsonl"
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = RUBRIC.read_text(encoding="utf-8")
    assert text.count("mode: per_dimension") == 1
    rubric = tmp_path / "mangaassist-combined.yaml"
    rubric.write_text(text.replace("mode: per_dimension", "mode: combined"), encoding="utf-8")
    return dataset, rubric


def _rows(text: str) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {r["test_id"]: {k: v for k, v in r.items() if k != "run_id"} for r in rows}


def test_a_combined_run_asks_the_judge_once_per_case_and_matches_the_direct_engine(tmp_path, counted, inputs):
    dataset, rubric = inputs
    outcome = run_local_execution(dataset_path=dataset, catalog_path=CATALOG, rubric_path=rubric, judge="bedrock",
                                  verdict_cache_dir=tmp_path / "verdicts", **FAST)
    assert outcome.status in ("SUCCEEDED", "FAILED") and outcome.report is not None, outcome.cause
    local = _rows(outcome.results_jsonl)

    # Every item went through ScoreCase, no scorer of the Parallel ran.
    assert outcome.lambda_calls.get("score_case") == len(local)
    assert not {"relevance", "factual_accuracy", "consistency", "fluency"} & set(outcome.lambda_calls)
    assert outcome.report["judge_mode"] == "combined"

    # 1.0 judge calls per case that needs the judge: one combined call each, never one per dimension.
    needing = [r for r in local.values() if r["judge_calls"]]
    assert needing and counted.per_dimension == 0
    assert counted.combined == len(needing) == sum(r["judge_calls"] for r in local.values())
    assert outcome.report["judge_usage"]["calls"] / len(needing) == 1.0
    assert len(needing) == len(local)  # no golden case is settled by the checks alone

    # The same item results, field by field, as the direct engine in combined mode.
    calls_on_aws = counted.combined
    out = tmp_path / "direct"
    main(["run", "--engine", "direct", "--dataset", str(dataset), "--catalog", str(CATALOG), "--rubric", str(rubric),
          "--judge", "bedrock", "--judge-mode", "combined", "--cache-dir", str(tmp_path / "direct-verdicts"),
          "--out", str(out), "--quiet"])
    assert counted.combined - calls_on_aws == calls_on_aws and counted.per_dimension == 0
    assert _rows((out / "results.jsonl").read_text(encoding="utf-8")) == local
