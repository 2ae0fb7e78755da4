"""The stack follows the rubric profile: one scorer function and one Parallel branch per dimension,
alarms per category x dimension; the MangaAssist definition is the one from before profiles."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from infra.asl import (
    FIXED_ROLES,
    function_specs,
    load_definition,
    load_template,
    placeholders_in,
)
from infra.config import ConfigError, parse_config, read_cdk_json_context
from infra.profiles import profile_names, profile_shape

from .conftest import ACCOUNT, REGION, functions_by_handler_env, resources_of, walk_states

ROOT = Path(__file__).resolve().parents[2]
BEFORE_PROFILES = ROOT / "tests" / "fixtures" / "evaluation.asl.mangaassist-before-profiles.json"
RESEARCH_DIMENSIONS = ("factual_accuracy", "completeness", "tool_efficiency", "citation_accuracy", "source_quality")


def _parallel(definition: dict) -> dict:
    return definition["States"]["EvaluateItems"]["ItemProcessor"]["States"]["ScoreDimensions"]


def _without_comments(definition: dict) -> dict:
    out = copy.deepcopy(definition)
    out.pop("Comment", None)
    out["States"]["Prepare"].pop("Comment", None)
    _parallel(out).pop("Comment", None)
    return out


def _without_combined_path(definition: dict) -> dict:
    """The definition as if it had no combined judging (issue 19): its two states and the judge_mode it
    carries taken out, the items routed straight to the Parallel again. What is left must be unchanged."""
    out = copy.deepcopy(definition)
    out["States"]["Prepare"]["ResultSelector"].pop("judge_mode.$")
    item_map = out["States"]["EvaluateItems"]
    item_map["ItemSelector"].pop("judge_mode.$")
    states = item_map["ItemProcessor"]["States"]
    for name in ("ChooseJudgeMode", "ScoreCase"):
        states.pop(name)
    states["NeedsGeneration"]["Choices"][0]["Next"] = "ScoreDimensions"
    states["GenerationSucceeded"]["Default"] = "ScoreDimensions"
    return out


def _without_run_errors_and_budget(definition: dict) -> dict:
    """The definition as if it had no child time budget and no run errors (issue 31, items 4 and 9):
    STANDARD children back to EXPRESS, the Tasks' TimeoutSeconds, the run-error Catches and states, the
    Map's Catch and Aggregate's run_error taken out. What is left must be unchanged."""
    out = copy.deepcopy(definition)
    out["States"]["Prepare"]["ResultSelector"].pop("map_error")
    item_map = out["States"]["EvaluateItems"]
    item_map.pop("Catch")
    item_map["Comment"] = "One EXPRESS child per (case, arm) element of items.json; results go to DynamoDB, the Map keeps no output."
    item_map["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] = "EXPRESS"
    states = item_map["ItemProcessor"]["States"]
    for name in ("GenerationFailure", "RecordRunError", "ItemRunNotDone"):
        states.pop(name)
    states["GenerationSucceeded"]["Choices"][0]["Next"] = "RecordItemError"
    tasks = [*states.values(), *(s for b in states["ScoreDimensions"]["Branches"] for s in b["States"].values())]
    for state in tasks:
        state.pop("TimeoutSeconds", None)
        if state.get("Catch"):
            state["Catch"] = [c for c in state["Catch"] if c["Next"] != "RecordRunError"]
    aggregate = out["States"]["Aggregate"]
    aggregate["Parameters"]["Payload"].pop("map_error.$")
    aggregate["ResultSelector"].pop("run_error.$")
    aggregate["Comment"] = "Report, baseline comparison, metrics, EvaluationCompleted event; returns the gate decision."
    aggregate["Next"] = "GateDecision"
    for name in ("RunDone", "RunNotDone"):
        out["States"].pop(name)
    return out


# ---- the expansion ------------------------------------------------------------------------------


def test_the_file_holds_one_template_branch():
    branches = _parallel(json.loads(load_template()))["Branches"]
    assert len(branches) == 1
    assert {"DimensionName", "DimensionFunctionArn"} <= placeholders_in(json.dumps(branches))


def test_mangaassist_expansion_equals_the_definition_before_profiles_plus_the_safety_branch():
    """The four dimensions the definition held before profiles expand to the same branches, state names
    (ScoreRelevance...), Retry and everything else; the profile adds the safety scorer as a fifth."""
    before = json.loads(BEFORE_PROFILES.read_text(encoding="utf-8"))
    dimensions = profile_shape("mangaassist").dimensions
    assert dimensions[-1] == "safety"
    after = json.loads(load_definition(dimensions))
    assert [b["StartAt"] for b in _parallel(after)["Branches"]] == [
        "ScoreRelevance", "ScoreFactualAccuracy", "ScoreConsistency", "ScoreFluency", "ScoreSafety"]
    four = json.loads(load_definition(dimensions[:-1]))
    assert _without_comments(_without_combined_path(_without_run_errors_and_budget(four))) == _without_comments(before)


def test_research_agent_expansion_has_one_branch_per_dimension():
    definition = json.loads(load_definition(RESEARCH_DIMENSIONS))
    branches = _parallel(definition)["Branches"]
    assert [b["StartAt"] for b in branches] == [
        "ScoreFactualAccuracy", "ScoreCompleteness", "ScoreToolEfficiency", "ScoreCitationAccuracy", "ScoreSourceQuality"]
    names = [b["States"][b["StartAt"]]["Parameters"]["FunctionName"] for b in branches]
    assert names == ["${FactualAccuracyFunctionArn}", "${CompletenessFunctionArn}", "${ToolEfficiencyFunctionArn}",
                     "${CitationAccuracyFunctionArn}", "${SourceQualityFunctionArn}"]
    assert "DimensionName" not in placeholders_in(json.dumps(definition))


def test_scorer_roles_are_derived_one_per_dimension():
    specs = function_specs(RESEARCH_DIMENSIONS)
    assert list(specs) == ["prepare", "generate", *RESEARCH_DIMENSIONS, "score_case", "composite", "aggregate"]
    for dimension in RESEARCH_DIMENSIONS:
        assert specs[dimension]["handler"] == "handlers.score_dimension.handler"
        assert specs[dimension]["environment"] == {"DIMENSION": dimension}
    assert set(FIXED_ROLES) == {"prepare", "generate", "score_case", "composite", "aggregate"}


def test_a_dimension_named_like_a_fixed_role_is_refused():
    with pytest.raises(ValueError, match="clash"):
        function_specs(("relevance", "composite"))


@pytest.mark.parametrize("name", ["mangaassist", "research-agent", "tool-use"])
def test_infra_reads_the_profiles_as_the_core_does(name):
    from fmquality.config.profile import load_profile

    core = load_profile(name)
    shape = profile_shape(name)
    assert list(shape.dimensions) == core.dimension_names
    assert list(shape.categories) == list(core.categories)


# ---- configuration ------------------------------------------------------------------------------


def test_rubric_profile_defaults_to_mangaassist_and_must_name_a_profile():
    raw = read_cdk_json_context()
    assert parse_config(raw).rubric_profile == "mangaassist"
    assert set(profile_names()) == {"mangaassist", "research-agent", "tool-use"}
    with pytest.raises(ConfigError, match="rubric_profile"):
        parse_config({**raw, "rubric_profile": "nope"})


def test_alarms_must_name_the_profile_categories_and_dimensions():
    raw = read_cdk_json_context()
    # cdk.json's explicit rules name MangaAssist's recommendation/relevance: not a research-agent pair.
    with pytest.raises(ConfigError, match="not a category of profile research-agent"):
        parse_config({**raw, "rubric_profile": "research-agent"})
    config = parse_config({**raw, "rubric_profile": "research-agent", "alarms": {}})
    pairs = {(a.intent, a.dimension) for a in config.dimension_alarms()}
    assert pairs == {(c, d) for c in profile_shape("research-agent").categories for d in RESEARCH_DIMENSIONS}


# ---- synthesis with the research-agent profile --------------------------------------------------


@pytest.fixture(scope="module")
def research_template(tmp_path_factory) -> dict:
    os.environ["FMQ_SKIP_LAYER_BUNDLING"] = "1"
    import aws_cdk as cdk

    import app as cdk_app

    config = parse_config({**read_cdk_json_context(), "rubric_profile": "research-agent", "alarms": {}})
    outdir = tmp_path_factory.mktemp("cdk.out.research")
    application, evaluation, _ = cdk_app.build_app(config, outdir=str(outdir),
                                                   env=cdk.Environment(account=ACCOUNT, region=REGION))
    application.synth()
    return json.loads((outdir / f"{evaluation.stack_name}.template.json").read_text())


def test_research_agent_stack_has_one_scorer_function_per_profile_dimension(research_template):
    scorers = [f["Properties"]["Environment"]["Variables"]["DIMENSION"]
               for f in resources_of(research_template, "AWS::Lambda::Function").values()
               if f["Properties"]["Handler"] == "handlers.score_dimension.handler"]
    assert sorted(scorers) == sorted(RESEARCH_DIMENSIONS)


def test_research_agent_parallel_calls_those_functions(research_template):
    (machine,) = resources_of(research_template, "AWS::StepFunctions::StateMachine").values()
    definition = json.loads(machine["Properties"]["DefinitionString"])
    substitutions = machine["Properties"]["DefinitionSubstitutions"]
    functions = functions_by_handler_env(research_template)
    branches = _parallel(definition)["Branches"]
    assert len(branches) == 5
    for branch, dimension in zip(branches, RESEARCH_DIMENSIONS, strict=True):
        placeholder = branch["States"][branch["StartAt"]]["Parameters"]["FunctionName"][2:-1]
        logical_id, _ = functions[dimension]
        assert substitutions[placeholder] == {"Fn::GetAtt": [logical_id, "Arn"]}
    assert set(substitutions) == placeholders_in(machine["Properties"]["DefinitionString"])
    assert not any(name == "ScoreRelevance" for name, _ in walk_states(definition["States"]))


def test_research_agent_alarms_are_per_category_and_dimension(research_template):
    alarms = [a["Properties"] for a in resources_of(research_template, "AWS::CloudWatch::Alarm").values()
              if a["Properties"].get("MetricName", "").startswith("DimensionScore_")]
    pairs = {(a["Dimensions"][0]["Value"], a["MetricName"].removeprefix("DimensionScore_")) for a in alarms}
    assert pairs == {(c, d) for c in profile_shape("research-agent").categories for d in RESEARCH_DIMENSIONS}
