"""The Generate handler against moto S3: targets.json read once per container, the item's arm picks
its target, a failed generation comes back as an error (never an answer to score), and the metrics.
Doubles stand in for the target builder and ``generate`` except in the last test.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from pydantic import ValidationError

from moto_env import BUCKET, CASES, load_event

TARGETS_KEY = "runs/run-fixture/targets.json"
CONTROL_ARN = "arn:aws:lambda:us-east-1:123456789012:function:mangaassist-chat:12"


class _Target:
    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.id = {"lambda": CONTROL_ARN}.get(spec.kind, spec.ref or spec.kind)
        self.version = "12" if spec.kind == "lambda" else None


class _Doubles:
    """make_target and generate as the handler calls them, recording the calls."""

    def __init__(self) -> None:
        self.built: list[tuple[Any, Any]] = []
        self.rubrics: list[Any] = []
        self.asked: list[tuple[str, str]] = []
        self.failure: str | None = None

    def make_target(self, spec, client=None, *, rubric=None):
        self.built.append((spec, client))
        self.rubrics.append(rubric)
        return _Target(spec)

    def generate(self, case, target):
        from fmquality.domain.results import Generation

        self.asked.append((case.test_id, target.spec.kind))
        if self.failure:
            return case, Generation(target_id=target.id, target_kind=target.spec.kind, target_version=target.version,
                                    error=self.failure, attempts=4, latency_ms=None)
        answer = f"{target.spec.kind} says: returns are accepted within 15 days."
        return case.model_copy(update={"response": answer}), Generation(
            target_id=target.id, target_kind=target.spec.kind, target_version=target.version, response=answer,
            latency_ms=640.0, usage={"input_tokens": 410, "output_tokens": 28}, cost_usd=0.0007)


@pytest.fixture
def module():
    """handlers.generate, with no target cached from an earlier test."""
    import handlers

    handlers.target_for.cache_clear()
    yield importlib.import_module("handlers.generate")
    handlers.target_for.cache_clear()


@pytest.fixture
def doubles(module, monkeypatch) -> _Doubles:
    """The run's targets built by the double (``run.targets`` builds them), answers from its generate."""
    import fmquality.run.targets as run_targets

    d = _Doubles()
    monkeypatch.setattr(run_targets, "make_target", d.make_target)
    monkeypatch.setattr(module, "generate", d.generate)
    return d


def _put_targets(aws, candidate: dict | None, control: dict | None = None, key: str = TARGETS_KEY) -> None:
    aws.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps({"candidate": candidate, "control": control}).encode())
    # The run's resolved rubric, as Prepare writes it beside targets.json (the target prices with it).
    from fmquality.config.rubric import load_rubric

    rubric_key = load_event("generate.json")["rubric_key"]
    aws.s3.put_object(Bucket=BUCKET, Key=rubric_key, Body=load_rubric().model_dump_json().encode())


def _emf(captured: str) -> dict:
    """The last EMF record, each metric as a list of values (EMF writes a number or a list)."""
    records = [json.loads(x) for x in captured.splitlines() if x.startswith("{") and '"_aws"' in x]
    assert records, "no EMF record written"
    return {k: v if k == "_aws" or isinstance(v, list) else [v] for k, v in records[-1].items()}


BEDROCK = {"kind": "bedrock", "ref": "s3://bundles/assist.yaml", "model_id": None, "headers_secret": None,
           "headers_env": None, "timeout_s": 30.0, "max_concurrency": None, "max_attempts": 4}
LAMBDA = {**BEDROCK, "kind": "lambda", "ref": "mangaassist-chat:12", "max_concurrency": 5}


def test_the_arm_picks_its_target_and_the_state_comes_back_with_the_answer(aws, lambda_context, doubles, module, capsys):
    import handlers

    _put_targets(aws, BEDROCK, LAMBDA)
    event = load_event("generate.json", arm="control")
    out = module.handler(event, lambda_context)

    [(spec, client)] = doubles.built
    assert (spec.kind, spec.ref, spec.max_concurrency) == ("lambda", "mangaassist-chat:12", 5)
    # The target's own clients (its timeout, one attempt per call), not the container's shared ones,
    # and the run's rubric to price answers with.
    assert callable(client) and client is not handlers.aws_client
    assert doubles.rubrics[0] is not None and doubles.rubrics[0].version
    assert doubles.asked == [("faq-returns-window", "lambda")]
    # The Map item's state, with the answer and who gave it; keys it does not use pass through unchanged.
    assert out["item"]["response"] == "lambda says: returns are accepted within 15 days."
    assert out["generation"]["target_id"] == CONTROL_ARN and out["generation"]["target_version"] == "12"
    assert {k: out[k] for k in ("run_id", "bucket", "rubric_key", "targets_key", "generate", "arm")} == {
        k: event[k] for k in ("run_id", "bucket", "rubric_key", "targets_key", "generate", "arm")}
    assert "error" not in out  # the state machine's Choice goes on to the scorers
    emf = _emf(capsys.readouterr().out)
    assert emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]
    assert (emf["GenerationLatencyMs"], emf["GenerationErrors"]) == ([640.0], [0.0])
    assert (emf["GenerationInputTokens"], emf["GenerationOutputTokens"]) == ([410.0], [28.0])


def test_targets_json_is_read_once_per_container_per_run(aws, lambda_context, doubles, module):
    _put_targets(aws, BEDROCK)
    import handlers

    reads: list[str] = []
    # The handler's own client: count its GetObject calls.
    handlers.aws_client("s3").meta.events.register("provide-client-params.s3.GetObject",
                                                   lambda params, **kw: reads.append(params["Key"]))
    for case in CASES:
        module.handler(load_event("generate.json", item={**case, "response": None}), lambda_context)
    targets_reads = lambda: [k for k in reads if k.endswith("targets.json")]  # noqa: E731 - the rubric is read too
    assert targets_reads() == [TARGETS_KEY] and len(doubles.built) == 1 and len(doubles.asked) == len(CASES)

    # Another run (another key) in the same container reads its own targets.
    _put_targets(aws, LAMBDA, key="runs/other/targets.json")
    module.handler(load_event("generate.json", run_id="other", targets_key="runs/other/targets.json"), lambda_context)
    assert targets_reads() == [TARGETS_KEY, "runs/other/targets.json"] and doubles.asked[-1][1] == "lambda"


def test_a_failed_generation_returns_an_error_and_no_answer(aws, lambda_context, doubles, module, capsys):
    _put_targets(aws, BEDROCK)
    doubles.failure = "ThrottlingException: Too many requests"
    recorded = CASES[0]["response"]
    out = module.handler(load_event("generate.json", item=dict(CASES[0])), lambda_context)

    assert out["item"]["response"] is None  # never the recorded answer in the target's place
    assert out["generation"]["error"] == "ThrottlingException: Too many requests" and out["generation"]["attempts"] == 4
    # The shape a Catch gives, so RecordItemError turns it into the item's error record.
    assert out["error"]["Error"] == "GenerationFailed"
    assert out["error"]["Cause"] == ("bedrock target s3://bundles/assist.yaml gave no answer after 4 attempt(s): "
                                     "ThrottlingException: Too many requests")
    assert recorded not in json.dumps(out)
    emf = _emf(capsys.readouterr().out)
    assert emf["GenerationErrors"] == [1.0] and "GenerationLatencyMs" not in emf


def test_a_control_item_in_a_run_without_a_control_is_refused(aws, lambda_context, doubles, module):
    _put_targets(aws, BEDROCK, None)
    from fmquality.domain.errors import TargetNotConfigured

    with pytest.raises(TargetNotConfigured, match="has no control target"):
        module.handler(load_event("generate.json", arm="control"), lambda_context)
    assert doubles.built == []


def test_a_malformed_generate_event_names_the_field(aws, lambda_context, doubles, module):
    with pytest.raises(ValidationError) as caught:
        module.handler(load_event("generate.json", arm="treatment"), lambda_context)
    assert [e["loc"] for e in caught.value.errors()] == [("arm",)]


def test_the_real_generation_code_answers_through_a_python_target(aws, lambda_context, module, monkeypatch):
    monkeypatch.setenv("ALLOWED_TARGET_KINDS", "recorded,python")  # python: targets only where allowed
    spec = {"kind": "python", "ref": "tests.e2e.chatbot_double:recorded"}
    _put_targets(aws, spec)
    case = json.loads((__import__("pathlib").Path(__file__).parents[1] / "fixtures" / "cli_good.jsonl")
                      .read_text().splitlines()[0])
    out = module.handler(load_event("generate.json", item={**case, "response": None}), lambda_context)
    assert out["item"]["response"] == case["response"] and "error" not in out
    assert out["generation"]["target_kind"] == "python"
