"""Synthesize the app with cdk.json's configuration plus a few overrides (for settings whose non-default
value must be seen in a template). cdk-nag runs as in app.py: a finding makes ``synth_variant`` raise."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.infrastructure.conftest import ACCOUNT, REGION


@dataclass
class Variant:
    outdir: Path
    config: Any
    evaluation_stack_name: str

    def template(self, pattern: str) -> dict[str, Any]:
        (path,) = self.outdir.glob(pattern)
        return json.loads(path.read_text())

    @property
    def evaluation(self) -> dict[str, Any]:
        return self.template(f"{self.evaluation_stack_name}.template.json")

    @property
    def evaluation_metadata(self) -> dict[str, list[dict[str, Any]]]:
        return self.template(f"{self.evaluation_stack_name}.metadata.json")


def merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def synth_variant(outdir: Path, **overrides: Any) -> Variant:
    os.environ["FMQ_SKIP_LAYER_BUNDLING"] = "1"
    import aws_cdk as cdk

    import app as cdk_app
    from infra.config import parse_config, read_cdk_json_context

    config = parse_config(merged(read_cdk_json_context(), overrides))  # validated like cdk.json itself
    application, evaluation, _ = cdk_app.build_app(config, outdir=str(outdir),
                                                   env=cdk.Environment(account=ACCOUNT, region=REGION))
    application.synth()  # raises on any unacknowledged cdk-nag finding
    return Variant(outdir=outdir, config=config, evaluation_stack_name=evaluation.stack_name)


def metadata_entries(metadata: dict[str, list[dict[str, Any]]], entry_type: str) -> list[tuple[str, Any]]:
    """(construct path, data) of every metadata entry of ``entry_type`` in a stack's metadata.json."""
    return [(path, entry["data"]) for path, entries in metadata.items() for entry in entries
            if entry.get("type") == entry_type]
