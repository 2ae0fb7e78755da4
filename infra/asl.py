"""The evaluation state machine's definition file and the ONE mapping of its ${Placeholders}.

CDK fills the placeholders with ``definition_substitutions`` (infra/constructs/state_machine.py) and the
local engine (``fmquality run``) fills them with ``render_definition``; both build the mapping with
``asl_substitutions``, so the names and their meaning cannot drift apart. Pure Python: no aws_cdk import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

STATEMACHINES_DIR = Path(__file__).resolve().parent.parent / "statemachines"
# statemachines/evaluation.functions.json is the ONE mapping of placeholders to functions (their role,
# handler and fixed environment); the local engine (lambdas/fmquality/local/engine.py) reads it too.
FUNCTIONS_MANIFEST_PATH = STATEMACHINES_DIR / "evaluation.functions.json"
_MANIFEST = json.loads(FUNCTIONS_MANIFEST_PATH.read_text(encoding="utf-8"))
DEFINITION_PATH = STATEMACHINES_DIR / _MANIFEST["definition"]

# Lambda role -> placeholder of its ARN; the four scorers are named after their dimension.
FUNCTION_PLACEHOLDERS: dict[str, str] = {role: spec["placeholder"] for role, spec in _MANIFEST["functions"].items()}
# Lambda role -> handler ("module.function") and the role's fixed environment (e.g. DIMENSION).
FUNCTION_HANDLERS: dict[str, str] = {role: spec["handler"] for role, spec in _MANIFEST["functions"].items()}
FUNCTION_ENVIRONMENT: dict[str, dict[str, str]] = {
    role: dict(spec.get("environment", {})) for role, spec in _MANIFEST["functions"].items()
}
# The data bucket the Distributed Map's ItemReader reads runs/<run_id>/items.json from.
BUCKET_PLACEHOLDER: str = _MANIFEST["bucket_placeholder"]

PLACEHOLDERS: tuple[str, ...] = (*FUNCTION_PLACEHOLDERS.values(), BUCKET_PLACEHOLDER)
FUNCTION_ROLES: tuple[str, ...] = tuple(FUNCTION_PLACEHOLDERS)

# CloudFormation's Fn::Sub syntax, which definition_substitutions uses: ${Name}. "${!Literal}" escapes.
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def asl_substitutions(function_arns: Mapping[str, str], bucket_name: str) -> dict[str, str]:
    """Placeholder -> value for one deployment (CDK: tokens; local engine: moto ARNs and names).

    ``function_arns`` maps every role in FUNCTION_ROLES to its function ARN; a missing or unknown role
    is an error, so a new Lambda cannot be half-wired.
    """
    missing = sorted(set(FUNCTION_ROLES) - set(function_arns))
    unknown = sorted(set(function_arns) - set(FUNCTION_ROLES))
    if missing or unknown:
        raise ValueError(f"function_arns: missing roles {missing}, unknown roles {unknown}")
    if not bucket_name:
        raise ValueError("bucket_name is empty")
    substitutions = {FUNCTION_PLACEHOLDERS[role]: arn for role, arn in function_arns.items()}
    substitutions[BUCKET_PLACEHOLDER] = bucket_name
    return substitutions


def load_definition(path: Path = DEFINITION_PATH) -> str:
    """The raw ASL text with its ${Placeholders}. Valid JSON, so validators can read it unfilled."""
    return path.read_text(encoding="utf-8")


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
