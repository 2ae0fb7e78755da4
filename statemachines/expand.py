"""Expand the evaluation state machine's ONE scorer branch into one Parallel branch per dimension.

statemachines/evaluation.asl.json holds a single template branch in its ``ScoreDimensions`` Parallel,
written with two markers: ``${DimensionName}`` (the dimension in PascalCase, used in the state name
``Score${DimensionName}``) and ``${DimensionFunctionArn}`` (its function). ``expand_definition`` turns
it into one branch per dimension of a rubric profile, each calling ``${<Pascal>FunctionArn}``, and
``function_specs`` derives the scorer roles of the functions manifest (one function per dimension,
same handler, env DIMENSION=<name>). Adding a profile therefore adds no Lambda code path: the scorers
are the profile's dimension list.

Why a file loaded by path, stdlib only: CDK (infra/asl.py) and the local engine
(lambdas/fmquality/engines/definition.py) must expand the same way, but infra/ never imports lambdas/ and the
core never imports infra/ (DESIGN section 2). Both load this module with importlib from its path
beside the ASL it expands, so there is one implementation and no package dependency either way.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

NAME_MARKER = "${DimensionName}"
ARN_MARKER = "${DimensionFunctionArn}"
PARALLEL_STATE = "ScoreDimensions"
_DIMENSION = re.compile(r"^[a-z][a-z0-9_\-]*$")


def pascal(dimension: str) -> str:
    """``factual_accuracy`` -> ``FactualAccuracy`` (the state and placeholder spelling)."""
    return "".join(part.capitalize() for part in re.split(r"[_\-]", dimension) if part)


def function_placeholder(dimension: str) -> str:
    return f"{pascal(dimension)}FunctionArn"


def _check_dimensions(dimensions: Sequence[str], reserved: Sequence[str] = ()) -> list[str]:
    names = list(dimensions)
    if not names:
        raise ValueError("dimensions: at least one is needed")
    bad = [d for d in names if not isinstance(d, str) or not _DIMENSION.match(d)]
    if bad:
        raise ValueError(f"dimensions: not lower_snake names {bad}")
    if len({pascal(d) for d in names}) != len(names):
        raise ValueError(f"dimensions: duplicates (after PascalCase) in {names}")
    clash = sorted(set(names) & set(reserved))
    if clash:
        raise ValueError(f"dimensions: {clash} clash with the fixed function roles")
    return names


def expand_definition(definition: Mapping[str, Any], dimensions: Sequence[str]) -> dict[str, Any]:
    """A copy of the ASL with the template branch of every Parallel named ``ScoreDimensions`` replaced
    by one branch per dimension, in the given order."""
    names = _check_dimensions(dimensions)
    out = copy.deepcopy(dict(definition))
    found = 0

    def walk(states: dict[str, Any]) -> None:
        nonlocal found
        for name, state in states.items():
            if name == PARALLEL_STATE and state.get("Type") == "Parallel":
                branches = state.get("Branches") or []
                if len(branches) != 1 or NAME_MARKER not in json.dumps(branches[0]):
                    raise ValueError(f"{PARALLEL_STATE}: expected ONE template branch using {NAME_MARKER}")
                template = json.dumps(branches[0])
                state["Branches"] = [
                    json.loads(template.replace(NAME_MARKER, pascal(d))
                               .replace(ARN_MARKER, "${" + function_placeholder(d) + "}"))
                    for d in names
                ]
                found += 1
            for key in ("Branches",):
                for branch in state.get(key) or []:
                    walk(branch.get("States", {}))
            processor = state.get("ItemProcessor") or state.get("Iterator")
            if processor:
                walk(processor.get("States", {}))

    walk(out.get("States", {}))
    if found != 1:
        raise ValueError(f"expected one Parallel state {PARALLEL_STATE!r} with a template branch, found {found}")
    return out


def expand_definition_text(text: str, dimensions: Sequence[str]) -> str:
    return json.dumps(expand_definition(json.loads(text), dimensions), indent=2, ensure_ascii=False)


def function_specs(manifest: Mapping[str, Any], dimensions: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Role -> {placeholder, handler, environment}: the manifest's fixed functions, with one scorer per
    dimension (named by the dimension) inserted where the manifest's ``scorers_after`` says."""
    fixed: dict[str, dict[str, Any]] = {r: dict(s) for r, s in manifest["functions"].items()}
    names = _check_dimensions(dimensions, reserved=tuple(fixed))
    scorer = manifest["scorer"]
    scorers = {
        d: {"placeholder": function_placeholder(d), "handler": scorer["handler"],
            "environment": {**scorer.get("environment", {}), scorer["dimension_variable"]: d}}
        for d in names
    }
    after = manifest.get("scorers_after")
    specs: dict[str, dict[str, Any]] = {}
    if after is None:
        specs.update(scorers)
    for role, spec in fixed.items():
        specs[role] = spec
        if role == after:
            specs.update(scorers)
    return specs
