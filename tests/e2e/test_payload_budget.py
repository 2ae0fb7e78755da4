"""Issue 31 item 5: the largest case the rubric accepts (its limits.max_response_chars of Japanese answer,
its limits.max_evidence_chars of evidence) goes through the local state machine with every state's
payload under Step Functions' 256 KiB, whether the answer is recorded or generated, with a judge that
records the longest prompt and reply the Bedrock judge keeps. Each state's input and output is measured
as moto measures it (its UTF-8 JSON), and the largest per state is printed for the closing note.

The prompts and raw replies are stored, not passed: every score whose copy in the state was cut is in the
embedded bucket whole at runs/<run>/judge/<arm>/<test_id>/<dimension>.json, and results.jsonl (written by
Aggregate from what Composite recorded) names it in judge_trace_uri."""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.payload import DIMENSION_BYTES, json_bytes
from fmquality.domain.scores import DimensionScore
from fmquality.engines.local import BUCKET_NAME, run_local_execution
from fmquality.judges.bedrock.prompts import PROMPT_KEEP_CHARS, RAW_KEEP_CHARS
from fmquality.scoring.case import evidence_chars

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "datasets" / "mangaassist" / "golden.jsonl"
STATE_LIMIT_BYTES = 256 * 1024
ANSWER_SENTENCE = "ご注文の商品は未開封であれば、お届けから十五日以内に返品いただけます。"
CHUNK = ("返品ポリシー：未開封の商品は、お届けから十五日以内であれば返品を承ります。返金は五から七営業日以内に、"
         "元のお支払い方法へ行われます。デジタル商品は返品の対象外です。")


def largest_case(rubric) -> dict[str, Any]:
    """A Japanese FAQ line at the rubric's limits: the answer max_response_chars long, the evidence
    (chunks, query, page context) just under max_evidence_chars."""
    base = next(json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()
                if '"ja-JP"' in line and '"faq"' in line)
    limits = rubric.limits
    response = (ANSWER_SENTENCE * (limits.max_response_chars // len(ANSWER_SENTENCE) + 1))[:limits.max_response_chars]
    line = {**base, "test_id": "ja-faq-largest", "response": response, "retrieved_chunks": []}
    chunks: list[str] = []
    while True:
        trial = {**line, "retrieved_chunks": [*chunks, CHUNK]}
        if evidence_chars(TestCase.model_validate(trial)) > limits.max_evidence_chars:
            break
        chunks.append(CHUNK)
    line["retrieved_chunks"] = chunks
    case = TestCase.model_validate(line)
    assert len(case.response) == limits.max_response_chars
    assert limits.max_evidence_chars - len(CHUNK) - 10 < evidence_chars(case) <= limits.max_evidence_chars
    return line


@contextlib.contextmanager
def measured_states():
    """Every state's input and output size (UTF-8 JSON bytes) as moto's size check sees them."""
    from moto.stepfunctions.parser.asl.component.state import state as state_module
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service

    sizes: dict[str, int] = defaultdict(int)

    def size(value: Any) -> int:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8"))

    patched = []
    for cls in (state_module.CommonStateField, state_task_lambda.StateTaskLambda, state_task_service.StateTaskService):
        original = cls.__dict__.get("_verify_size_quota")
        if original is None:
            continue

        def verify(self, env, value, _original=original):
            sizes[self.name] = max(sizes[self.name], size(value))
            return _original(self, env, value)

        cls._verify_size_quota = verify
        patched.append((cls, original))
    original_entered = state_module.CommonStateField._get_state_entered_event_details

    def entered(self, env):
        sizes[f"{self.name} (input)"] = max(sizes[f"{self.name} (input)"], size(env.states.get_input()))
        return original_entered(self, env)

    state_module.CommonStateField._get_state_entered_event_details = entered
    try:
        yield sizes
    finally:
        state_module.CommonStateField._get_state_entered_event_details = original_entered
        for cls, original in patched:
            cls._verify_size_quota = original


class LongestTraceJudge:
    """The offline judge's verdicts with the longest prompt and reply the Bedrock judge keeps
    (PROMPT_KEEP_CHARS, RAW_KEEP_CHARS of Japanese): what a Bedrock-judged state carries at most."""

    name = "bedrock"
    model_id = "stand-in-longest-trace"

    def __init__(self) -> None:
        from fmquality.judges.offline import OfflineJudge

        self._inner = OfflineJudge()

    def judge(self, request, rubric):
        outcome = self._inner.judge(request, rubric)
        return outcome.model_copy(update={"prompt": "プ" * PROMPT_KEEP_CHARS, "raw": "ロ" * RAW_KEEP_CHARS,
                                          "calls": 1})


@pytest.mark.parametrize("answer", ["recorded", "generated"])
def test_the_largest_accepted_case_keeps_every_state_under_256_kib(tmp_path, monkeypatch, answer):
    from fmquality.judges import factory

    rubric = load_rubric()
    line = largest_case(rubric)
    dataset = tmp_path / "largest.jsonl"
    dataset.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    real = factory.make_judge
    monkeypatch.setattr(factory, "make_judge",
                        lambda name, *a, **k: LongestTraceJudge() if name == "bedrock" else real(name, *a, **k))
    target = "python:tests.e2e.chatbot_double:longest_japanese" if answer == "generated" else None
    stored: dict[str, bytes] = {}

    def keep_traces(client) -> None:
        s3 = client("s3")
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET_NAME, Prefix="runs/"):
            for entry in page.get("Contents", []):
                if "/judge/" in entry["Key"]:
                    stored[f"s3://{BUCKET_NAME}/{entry['Key']}"] = s3.get_object(Bucket=BUCKET_NAME,
                                                                                 Key=entry["Key"])["Body"].read()

    with measured_states() as sizes:
        outcome = run_local_execution(dataset_path=dataset, judge="bedrock", judge_mode="per_dimension",
                                      retry_wait_cap_s=0.01, target=target, inspect_aws=keep_traces)
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])
    print(f"\nlargest accepted case ({answer} answer): every state's largest payload, KiB")
    for name, size in largest:
        print(f"  {name:40s} {size / 1024:8.1f}")
    over = {name: size for name, size in sizes.items() if size >= STATE_LIMIT_BYTES}
    assert not over, over
    # ... and the case was scored, not lost to States.DataLimitExceeded (which no Catch can take).
    [result] = [json.loads(row) for row in outcome.results_jsonl.splitlines()]
    assert result["status"] != "error", result.get("error")
    assert {s["status"] for s in result["dimension_scores"].values()} <= {"scored", "not_applicable"}
    # Every score whose state copy was cut (the judged ones by their prompt and reply; factual_accuracy by
    # its evidence quotes) names its whole self, stored before the state carried it; the others store nothing.
    scores = result["dimension_scores"]
    judged = {d for d, s in scores.items() if s["judge_calls"]}
    traced = {d: s for d, s in scores.items() if s["judge_trace_uri"]}
    assert judged and judged <= set(traced)
    assert set(stored) == {s["judge_trace_uri"] for s in traced.values()}
    for dimension, score in traced.items():
        assert score["judge_trace_uri"] == f"s3://{BUCKET_NAME}/runs/{outcome.run_id}/judge/candidate/ja-faq-largest/{dimension}.json"
        whole = DimensionScore.model_validate_json(stored[score["judge_trace_uri"]])
        assert (whole.status, whole.score, whole.sub_scores) == (score["status"], score["score"], score["sub_scores"])
        assert json_bytes(whole.model_dump(mode="json")) > DIMENSION_BYTES >= json_bytes(score)
        if dimension in judged:
            assert (whole.judge_prompt, whole.judge_raw) == ("プ" * PROMPT_KEEP_CHARS, "ロ" * RAW_KEEP_CHARS)
            assert len(score["judge_prompt"]) < PROMPT_KEEP_CHARS and len(score["judge_raw"]) < RAW_KEEP_CHARS
    # ... and the local engine hands them over before the embedded bucket goes (`fmquality run` writes them
    # to <out>/judge/...).
    prefix = f"s3://{BUCKET_NAME}/runs/{outcome.run_id}/"
    assert outcome.judge_traces == {uri[len(prefix):]: body for uri, body in stored.items()}


class LongTraceWrapper:
    """Any judge's verdicts with a prompt and raw reply past what a state carries (combined calls too)."""

    prompt = "P" * 30_000
    raw = "R" * 30_000

    def __init__(self, inner) -> None:
        self._inner = inner
        self.name, self.model_id = inner.name, getattr(inner, "model_id", None)

    def judge(self, request, rubric):
        return self._inner.judge(request, rubric).model_copy(update={"prompt": self.prompt, "raw": self.raw})

    def judge_combined(self, request, rubric):
        return self._inner.judge_combined(request, rubric).model_copy(update={"prompt": self.prompt, "raw": self.raw})

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_fmquality_run_puts_the_stored_traces_beside_the_results(tmp_path, monkeypatch):
    """`fmquality run` on the local state machine (combined judging: ScoreCase): each result's
    judge_trace_uri names a file the --out folder holds at judge/<arm>/<test_id>/<dimension>.json."""
    from fmquality.cli.main import main
    from fmquality.judges import factory

    real = factory.make_judge
    monkeypatch.setattr(factory, "make_judge", lambda *a, **k: LongTraceWrapper(real(*a, **k)))
    out = tmp_path / "out"
    stale = out / "judge" / "candidate" / "gone" / "relevance.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}", encoding="utf-8")
    code = main(["run", "--dataset", str(REPO / "tests" / "fixtures" / "cli_good.jsonl"), "--out", str(out), "--quiet",
                 "--judge", "scripted"])
    assert code == 0
    results = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    traced = [(r["test_id"], d, s) for r in results for d, s in r["dimension_scores"].items() if s["judge_trace_uri"]]
    assert traced and not stale.exists()
    for test_id, dimension, score in traced:
        relative = f"judge/candidate/{test_id}/{dimension}.json"
        assert score["judge_trace_uri"].endswith(f"/runs/{results[0]['run_id']}/{relative}")
        whole = DimensionScore.model_validate_json((out / relative).read_bytes())
        assert (whole.judge_prompt, whole.judge_raw) == (LongTraceWrapper.prompt, LongTraceWrapper.raw)
    assert sorted(p.relative_to(out).as_posix() for p in (out / "judge").rglob("*.json")) == sorted(
        f"judge/candidate/{t}/{d}.json" for t, d, _ in traced)
