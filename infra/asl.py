"""The evaluation state machine's definition file and the ONE mapping of its ${Placeholders}.

CDK fills the placeholders with ``definition_substitutions`` (infra/constructs/state_machine.py) and the
local engine (``fmquality run``) fills them with its own ``render_definition``; both expand the scorer
branch and derive the scorer roles with statemachines/expand.py (loaded by path, see its docstring), so
the names and their meaning cannot drift apart. Pure Python: no aws_cdk import.

The scorer roles depend on the rubric profile's dimensions; the module constants below are those of
the default profile (mangaassist), the functions take the dimension list.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

from infra.profiles import DEFAULT_PROFILE, profile_shape

STATEMACHINES_DIR = Path(__file__).resolve().parent.parent / "statemachines"
# statemachines/evaluation.functions.json is the ONE mapping of placeholders to functions (their role,
# handler and fixed environment); the local engine (lambdas/fmquality/engines/definition.py) reads it too.
FUNCTIONS_MANIFEST_PATH = STATEMACHINES_DIR / "evaluation.functions.json"
EXPAND_PATH = STATEMACHINES_DIR / "expand.py"
_MANIFEST = json.loads(FUNCTIONS_MANIFEST_PATH.read_text(encoding="utf-8"))
DEFINITION_PATH = STATEMACHINES_DIR / _MANIFEST["definition"]


def _load_expand() -> ModuleType:
    name = "fmquality_statemachines_expand"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXPAND_PATH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


expand = _load_expand()

DEFAULT_DIMENSIONS: tuple[str, ...] = profile_shape(DEFAULT_PROFILE).dimensions


def function_specs(dimensions: Sequence[str] = DEFAULT_DIMENSIONS) -> dict[str, dict]:
    """Role -> {placeholder, handler, environment}; one scorer role per dimension."""
    return expand.function_specs(_MANIFEST, dimensions)


def function_placeholders(dimensions: Sequence[str] = DEFAULT_DIMENSIONS) -> dict[str, str]:
    return {role: spec["placeholder"] for role, spec in function_specs(dimensions).items()}


def function_handlers(dimensions: Sequence[str] = DEFAULT_DIMENSIONS) -> dict[str, str]:
    return {role: spec["handler"] for role, spec in function_specs(dimensions).items()}


def function_environment(dimensions: Sequence[str] = DEFAULT_DIMENSIONS) -> dict[str, dict[str, str]]:
    return {role: dict(spec.get("environment", {})) for role, spec in function_specs(dimensions).items()}


# The default profile's mapping (kept as constants for the callers and tests that need no profile).
FUNCTION_PLACEHOLDERS: dict[str, str] = function_placeholders()
FUNCTION_HANDLERS: dict[str, str] = function_handlers()
FUNCTION_ENVIRONMENT: dict[str, dict[str, str]] = function_environment()
# The data bucket the Distributed Map's ItemReader reads runs/<run_id>/items.json from.
BUCKET_PLACEHOLDER: str = _MANIFEST["bucket_placeholder"]

PLACEHOLDERS: tuple[str, ...] = (*FUNCTION_PLACEHOLDERS.values(), BUCKET_PLACEHOLDER)
FUNCTION_ROLES: tuple[str, ...] = tuple(FUNCTION_PLACEHOLDERS)
FIXED_ROLES: tuple[str, ...] = tuple(_MANIFEST["functions"])

# CloudFormation's Fn::Sub syntax, which definition_substitutions uses: ${Name}. "${!Literal}" escapes.
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def asl_substitutions(function_arns: Mapping[str, str], bucket_name: str,
                      dimensions: Sequence[str] = DEFAULT_DIMENSIONS) -> dict[str, str]:
    """Placeholder -> value for one deployment (CDK: tokens; local engine: moto ARNs and names).

    ``function_arns`` maps every role (the fixed ones and one scorer per dimension) to its function
    ARN; a missing or unknown role is an error, so a new Lambda cannot be half-wired.
    """
    placeholders = function_placeholders(dimensions)
    missing = sorted(set(placeholders) - set(function_arns))
    unknown = sorted(set(function_arns) - set(placeholders))
    if missing or unknown:
        raise ValueError(f"function_arns: missing roles {missing}, unknown roles {unknown}")
    if not bucket_name:
        raise ValueError("bucket_name is empty")
    substitutions = {placeholders[role]: arn for role, arn in function_arns.items()}
    substitutions[BUCKET_PLACEHOLDER] = bucket_name
    return substitutions


def load_template(path: Path = DEFINITION_PATH) -> str:
    """The ASL file as written: ONE scorer branch with the template markers."""
    return path.read_text(encoding="utf-8")


def load_definition(dimensions: Sequence[str] = DEFAULT_DIMENSIONS, path: Path = DEFINITION_PATH) -> str:
    """The ASL text with one scorer branch per dimension and its ${Placeholders}. Valid JSON, so
    validators can read it unfilled."""
    return expand.expand_definition_text(load_template(path), dimensions)


def map_result_prefixes(definition: str) -> tuple[str, ...]:
    """The key prefixes the Distributed Maps' ResultWriters write under (``ResultWriter.Parameters.Prefix``):
    the state machine role's result-writer grant is derived from the definition, so the two cannot drift."""
    prefixes: list[str] = []

    def walk(states: Mapping[str, dict]) -> None:
        for state in states.values():
            prefix = state.get("ResultWriter", {}).get("Parameters", {}).get("Prefix")
            if prefix and prefix not in prefixes:
                prefixes.append(prefix)
            for branch in state.get("Branches", []):
                walk(branch["States"])
            processor = state.get("ItemProcessor") or state.get("Iterator")
            if processor:
                walk(processor["States"])

    walk(json.loads(definition)["States"])
    return tuple(prefixes)


def placeholders_in(text: str) -> set[str]:
    return set(_PLACEHOLDER.findall(text))


def render_definition(text: str, substitutions: Mapping[str, str]) -> str:
    """Fill every placeholder (what Step Functions does with DefinitionSubstitutions).

    Raises if a placeholder has no value or a value has no placeholder. Values are inserted JSON-escaped
    because every placeholder sits inside a JSON string.
    """
    used = placeholders_in(text)
    unfilled = sorted(used - set(substitutions))
    unused = sorted(set(substitutions) - used)
    if unfilled or unused:
        raise ValueError(f"ASL placeholders without a value: {unfilled}; values without a placeholder: {unused}")
    rendered = _PLACEHOLDER.sub(lambda m: json.dumps(str(substitutions[m.group(1)]))[1:-1], text)
    json.loads(rendered)  # fail here, not inside the engine, if a value broke the JSON
    return rendered
