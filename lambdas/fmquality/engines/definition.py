"""The evaluation state machine's definition as the local engine runs it: statemachines/evaluation.asl.json,
its scorer branch expanded to the run rubric's profile dimensions by statemachines/expand.py (as CDK
does), its ${Placeholders} filled from statemachines/evaluation.functions.json (the mapping CDK uses),
and the one rewrite the embedded engine needs (``local_definition``).

The definition files sit beside the package in a repository checkout and under fmquality/bundled/ in an
installed package (``engines.shipped`` says where); the core never imports infra/, so expand.py is
loaded by path, as infra/asl.py loads it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

from fmquality.config.rubric import load_rubric
from fmquality.domain.errors import LocalEngineError
from fmquality.engines.shipped import LAMBDAS_DIR, STATEMACHINES_DIR  # noqa: F401 - LAMBDAS_DIR: engines.local's

FUNCTIONS_MANIFEST = STATEMACHINES_DIR / "evaluation.functions.json"

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def load_manifest(path: Path = FUNCTIONS_MANIFEST) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _expand_module() -> Any:
    """statemachines/expand.py, loaded once by path (CDK loads the same file: one implementation)."""
    name = "fmquality_statemachines_expand"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, STATEMACHINES_DIR / "expand.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def function_specs(manifest: dict[str, Any], dimensions: list[str]) -> dict[str, dict[str, Any]]:
    """Role -> {placeholder, handler, environment}: the fixed functions and one scorer per dimension."""
    return _expand_module().function_specs(manifest, dimensions)


def expanded_definition(manifest: dict[str, Any], dimensions: list[str]) -> str:
    """The ASL text with one ScoreDimensions branch per dimension (placeholders still unfilled)."""
    text = (STATEMACHINES_DIR / manifest["definition"]).read_text(encoding="utf-8")
    return _expand_module().expand_definition_text(text, dimensions)


def rubric_dimensions(rubric_path: Path | None) -> list[str]:
    """The dimensions of the run rubric's profile (the default rubric without ``--rubric``)."""
    return list(load_rubric(rubric_path).dimensions)


def render_definition(text: str, substitutions: dict[str, str]) -> str:
    """Fill ${Placeholders} the way DefinitionSubstitutions does; every one must have a value.
    infra/asl.py has its own copy for the CDK side (the core may not import infra/); the mapping they
    fill from is the one shared file."""
    missing = sorted(set(_PLACEHOLDER.findall(text)) - set(substitutions))
    if missing:
        raise LocalEngineError(f"ASL placeholders without a value: {missing}")
    return _PLACEHOLDER.sub(lambda m: json.dumps(substitutions[m.group(1)])[1:-1], text)


def local_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """The one rewrite the embedded engine needs, applied to the local copy only: moto accepts only
    ``ExecutionType: STANDARD`` for a Distributed Map's children, so EXPRESS children run as STANDARD.
    Scoring, retries, catches and paths are untouched."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            config = out.get("ProcessorConfig")
            if isinstance(config, dict) and config.get("ExecutionType") == "EXPRESS":
                out["ProcessorConfig"] = {**config, "ExecutionType": "STANDARD"}
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(definition)
