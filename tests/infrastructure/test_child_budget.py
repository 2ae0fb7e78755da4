"""Issue 31 item 4: a Map child's worst case, computed from the deployed definition and the functions'
timeouts in the template, fits the limit of its execution type, and any Task of the child that fails or
times out still ends in an explicit error record (a Catch inside the child), so Aggregate runs.

AWS limits (Step Functions developer guide, "Choosing workflow type"): an EXPRESS execution runs for five
minutes at most, a STANDARD one for a year. An EXPRESS child past its five minutes is failed as a whole:
no Catch inside it runs, no record is written, and past the Map's tolerated failures Aggregate never runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.judges.bedrock.judge import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S
from fmquality.run.generate import BASE_DELAY_S, MAX_DELAY_S, MAX_RETRY_AFTER_S
from fmquality.targets.base import TargetSpec

from .conftest import functions_by_handler_env

EXECUTION_LIMIT_S = {"EXPRESS": 5 * 60, "STANDARD": 365 * 24 * 3600}
RECORDERS = {"RecordItemError", "RecordRunError"}
# Step Functions' own work between states (transitions, the Lambda invoke call): a generous allowance.
TRANSITION_S = 1.0


def retry_worst(state: dict[str, Any], task_s: float) -> float:
    """A Task's worst case: every attempt its retriers allow (each retrier counts its own) running to the
    Task's timeout, plus the longest backoff before each retry (full jitter only shortens it)."""
    attempts, backoff = 1, 0.0
    for retrier in state.get("Retry", []):
        tries = retrier.get("MaxAttempts", 3)
        attempts += tries
        interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
        cap = retrier.get("MaxDelaySeconds", float("inf"))
        backoff += sum(min(cap, interval * rate**i) for i in range(tries))
    return attempts * (task_s + TRANSITION_S) + backoff


def state_worst(state: dict[str, Any]) -> float:
    if state["Type"] == "Task":
        assert "TimeoutSeconds" in state, "a child Task without TimeoutSeconds waits up to 99,999,999 s"
        return retry_worst(state, state["TimeoutSeconds"])
    if state["Type"] == "Parallel":
        return retry_worst(state, max(path_worst(b["States"], b["StartAt"]) for b in state["Branches"]))
    return TRANSITION_S


def successors(state: dict[str, Any]) -> list[str]:
    nexts = [state.get("Next"), state.get("Default"), *(c.get("Next") for c in state.get("Choices", [])),
             *(c["Next"] for c in state.get("Catch", []))]
    return [n for n in nexts if n]


def path_worst(states: dict[str, Any], start: str) -> float:
    """The longest (worst-case) path from ``start``: the child's states form a DAG (no loops)."""
    memo: dict[str, float] = {}

    def worst(name: str, seen: frozenset[str]) -> float:
        assert name not in seen, f"a loop through {name}"
        if name not in memo:
            state = states[name]
            memo[name] = state_worst(state) + max((worst(n, seen | {name}) for n in successors(state)), default=0.0)
        return memo[name]

    return worst(start, frozenset())


@pytest.fixture(scope="module")
def child(definition) -> tuple[str, dict[str, Any]]:
    processor = definition["States"]["EvaluateItems"]["ItemProcessor"]
    return processor["ProcessorConfig"]["ExecutionType"], processor


def test_the_childs_worst_case_fits_its_execution_type_and_the_run(child, definition):
    execution_type, processor = child
    worst = path_worst(processor["States"], processor["StartAt"])
    print(f"Map child ({execution_type}): worst case {worst:,.0f} s along its longest path")
    assert worst < EXECUTION_LIMIT_S[execution_type]
    assert worst < definition["TimeoutSeconds"]  # a single child never outlives the whole run
    # Why STANDARD: with the judge's and the target's retries a case can take longer than EXPRESS allows.
    assert worst > EXECUTION_LIMIT_S["EXPRESS"]


def _function_timeouts(evaluation_template, state_machine_resource) -> dict[str, int]:
    """ASL placeholder ("${GenerateFunctionArn}") -> that function's Timeout in the template."""
    by_logical_id = {logical_id: fn for logical_id, fn in functions_by_handler_env(evaluation_template).values()}
    out = {}
    for placeholder, value in state_machine_resource["Properties"]["DefinitionSubstitutions"].items():
        target = value.get("Fn::GetAtt", [None])[0] if isinstance(value, dict) else None
        if target in by_logical_id:
            out["${" + placeholder + "}"] = by_logical_id[target]["Properties"].get("Timeout", 3)
    return out


def _tasks(states: dict[str, Any], parallel: str | None = None):
    for name, state in states.items():
        if state["Type"] == "Task":
            yield name, state, parallel
        for branch in state.get("Branches", []):
            yield from _tasks(branch["States"], name)


def test_every_child_task_outlasts_its_function_and_a_failure_or_timeout_is_recorded(child, evaluation_template,
                                                                                     state_machine_resource):
    _, processor = child
    states = processor["States"]
    timeouts = _function_timeouts(evaluation_template, state_machine_resource)
    for name, state, parallel in _tasks(states):
        function_timeout = timeouts[state["Parameters"]["FunctionName"]]
        # Step Functions waits at least as long as Lambda lets the function run: a task abandoned while
        # its function still runs would be recorded as an error and then written over by the result.
        assert state["TimeoutSeconds"] >= function_timeout, name
        if name in RECORDERS:
            continue
        # States.ALL (States.Timeout included) caught on the Task, or on the Parallel it is a branch of,
        # into an error recorder: the child ends with a record whatever happens to the Task.
        catches = (states[parallel] if parallel else state).get("Catch", [])
        assert any("States.ALL" in c["ErrorEquals"] and c["Next"] in RECORDERS for c in catches), name


def test_the_functions_own_retries_finish_inside_their_lambda_timeouts(evaluation_template):
    """The judge's and the target's retry loops run inside the Lambda: their worst case fits its timeout,
    so they report (unscored, an error record) before Lambda cuts them off."""
    functions = functions_by_handler_env(evaluation_template)
    judge = load_rubric().judge
    judge_worst = judge.max_attempts * (DEFAULT_READ_TIMEOUT_S + DEFAULT_CONNECT_TIMEOUT_S) + sum(
        min(judge.max_delay_s, judge.base_delay_s * 2**i) for i in range(judge.max_attempts - 1))
    for role in ("relevance", "fluency", "score_case"):
        assert judge_worst < functions[role][1]["Properties"]["Timeout"], role
    spec = TargetSpec.parse("http://chatbot.example/chat")
    target_worst = spec.max_attempts * spec.timeout_s + (spec.max_attempts - 1) * max(MAX_RETRY_AFTER_S, MAX_DELAY_S)
    assert BASE_DELAY_S <= MAX_DELAY_S and target_worst < functions["generate"][1]["Properties"]["Timeout"]
