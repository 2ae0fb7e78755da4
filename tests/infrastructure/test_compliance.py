"""cdk-nag (AwsSolutions) and cfn-lint on every synthesized template."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def test_synth_has_no_unacknowledged_nag_or_validation_findings(synth):
    report = synth.validation_report()
    findings = [
        f"{plugin['pluginName']}: {violation['ruleName']} at {construct['constructPath']}"
        for plugin in report["pluginReports"]
        for violation in plugin["violations"]
        for construct in violation["violatingConstructs"]
    ]
    assert findings == [], "\n".join(findings)
    assert synth.error is None, synth.error


def test_cdk_validation_acknowledgments_carry_their_reasons(synth):
    for plugin in synth.validation_report()["pluginReports"]:
        for suppressed in plugin.get("suppressedViolations", []):
            assert len(suppressed["reason"]) > 40, suppressed["ruleName"]


def test_the_app_fails_synth_on_an_unacknowledged_nag_finding(tmp_path, monkeypatch):
    """Proves the check above can fail: the app as built by app.py, plus one non-compliant bucket."""
    monkeypatch.setenv("FMQ_SKIP_LAYER_BUNDLING", "1")
    import aws_cdk as cdk
    from aws_cdk import aws_s3 as s3

    import app as cdk_app
    from infra.config import load_config

    application, _, _ = cdk_app.build_app(load_config(), outdir=str(tmp_path))
    s3.Bucket(cdk.Stack(application, "Probe"), "PlainBucket")
    with pytest.raises(Exception, match="ValidationFailed"):
        application.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "Probe/PlainBucket" in report and "AwsSolutions-S10" in report
    assert "MangaAssistQuality" not in report  # only the probe is non-compliant


def test_cfn_lint_finds_no_errors_in_any_template(synth):
    synth.require_success()
    templates = sorted(str(p) for p in synth.outdir.glob("*.template.json"))
    # The evaluation and pipeline stacks, and the production watch nested in the evaluation stack.
    assert any("ProductionWatch" in Path(t).name and t.endswith(".nested.template.json") for t in templates), templates
    assert len([t for t in templates if not t.endswith(".nested.template.json")]) == 2, templates
    cfn_lint = shutil.which("cfn-lint", path=str(Path(sys.executable).parent)) or shutil.which("cfn-lint")
    assert cfn_lint, "cfn-lint is not installed (requirements-dev.txt)"
    proc = subprocess.run([cfn_lint, "--ignore-checks", "W3005", "--format", "parseable", "--", *templates],
                          capture_output=True, text=True, timeout=120)
    errors = [line for line in proc.stdout.splitlines() if ":E" in line]
    assert errors == [], proc.stdout
    assert proc.returncode in (0, 4, 8, 12), proc.stdout + proc.stderr  # warnings/info only, never errors (2)
