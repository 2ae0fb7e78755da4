"""cdk-nag acknowledgment reasons that make claims about the code must stay true."""

from __future__ import annotations

import json

from tests.infrastructure.variants import metadata_entries


def _acknowledged(synth) -> dict[str, dict[str, str]]:
    """Construct path -> {finding id: reason} of the evaluation stack."""
    synth.require_success()
    metadata = json.loads((synth.outdir / f"{synth.evaluation_stack_name}.metadata.json").read_text())
    out: dict[str, dict[str, str]] = {}
    for path, data in metadata_entries(metadata, "aws:cdk:acknowledged-rules"):
        out.setdefault(path, {}).update(data)
    return out


def test_prepare_runs_prefix_reason_says_where_run_ids_come_from(synth):
    (reason,) = [reason for path, rules in _acknowledged(synth).items() if path.endswith("/Functions/PrepareRole")
                 for rule, reason in rules.items() if rule.endswith("/runs/*]")]
    # The run id is the execution name, chosen by whoever starts the execution, and registered once.
    assert "generated per execution" not in reason
    assert "the run id is the execution name" in reason
    for caller in ("`fmquality start`", "the EventBridge rules", "the pipeline"):
        assert caller in reason
    assert "conditional write" in reason and "never overwritten" in reason
    assert "s3:PutObject" in reason
