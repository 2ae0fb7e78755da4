"""`fmquality doctor` end to end: the console command's parser, its clients, the printed findings and
the exit codes (0 every check passed, 1 a problem, 2 bad arguments, 3 the checks could not be done)."""

from __future__ import annotations

import pytest
from moto import mock_aws

from fmquality.cli import doctor as doctor_cli
from fmquality.cli.main import main
from tests.unit.doctor_env import PARAMETER, REGION, STACK, Stubbed, deploy, evaluation_template


@pytest.fixture
def aws(monkeypatch):
    """The command's own session, with Bedrock and Service Quotas stubbed (moto has neither)."""
    with mock_aws():
        stubbed = Stubbed()
        made = []

        def session_clients(session):
            made.append(session.region_name)
            return stubbed.factory()

        monkeypatch.setattr(doctor_cli, "session_clients", session_clients)
        stubbed.made = made
        yield stubbed


def test_a_ready_deployment_exits_0_and_says_so(aws, capsys):
    deploy(evaluation_template())
    aws.healthy()
    assert main(["doctor", "--stack", STACK, "--region", "eu-west-1"]) == 0
    out = capsys.readouterr().out
    assert aws.made == ["eu-west-1"]  # --region is the session's region
    assert out.splitlines()[0] == f"fmquality doctor: {STACK} in eu-west-1"
    assert out.splitlines()[-1] == "10 ok: ready for a first run"
    assert "           hint: the Map's concurrency is derived from judge_quota.requests_per_minute" in out


def test_a_problem_exits_1_printing_it_with_its_fix(aws, capsys):
    deploy(evaluation_template(parameter=False, subscribe=False))
    aws.healthy()
    assert main(["doctor", "--stack", STACK]) == 1
    out = capsys.readouterr().out
    assert f"  PROBLEM  parameter {PARAMETER}: does not exist" in out
    assert f"           fix: create it: aws ssm put-parameter --type String --name {PARAMETER}" in out
    assert "  warning  alerts subscription: the alerts topic has no subscription" in out
    assert out.splitlines()[-1] == "8 ok, 1 problem, 1 warning: problems found: fix them before the first run"
    assert aws.made == [REGION]  # the AWS configuration's region without --region


def test_a_stack_that_does_not_exist_exits_3(aws, capsys):
    assert main(["doctor", "--stack", "NoSuchStack"]) == 3
    captured = capsys.readouterr()
    assert "stack 'NoSuchStack' not found" in captured.err and captured.out == ""


def test_no_region_exits_3_before_any_call(monkeypatch, capsys):
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert main(["doctor", "--stack", STACK]) == 3
    assert "no region: pass --region" in capsys.readouterr().err


def test_no_credentials_exit_3_before_any_call(monkeypatch, capsys):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    assert main(["doctor", "--stack", STACK, "--region", REGION]) == 3
    assert "no AWS credentials" in capsys.readouterr().err


def test_without_a_stack_is_bad_usage_exit_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["doctor"])
    assert exited.value.code == 2 and "--stack" in capsys.readouterr().err


def test_a_profile_that_does_not_exist_exits_3(monkeypatch, capsys):
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    assert main(["doctor", "--stack", STACK]) == 3
    assert "the checks could not be done" in capsys.readouterr().err


def test_the_summary_counts_each_status():
    import io

    from fmquality.run.doctor import Finding

    out = io.StringIO()
    doctor_cli.print_findings([Finding("a", "problem", "x", "f"), Finding("b", "problem", "y", "g"),
                               Finding("c", "skipped", "z", "h"), Finding("d", "ok", "w")], STACK, REGION, out)
    lines = out.getvalue().splitlines()
    assert lines[-1] == "1 ok, 2 problems, 1 skipped: problems found: fix them before the first run"
    assert "h" not in [line.strip().removeprefix("fix: ") for line in lines]  # a skipped hint has no fix line
