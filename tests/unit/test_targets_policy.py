"""Which target kinds a deployment accepts (fmquality.targets.policy): python: never from an execution
input on AWS; an ssm: parameter cannot smuggle one in either."""

from __future__ import annotations

import json

import pytest

from fmquality.targets import TargetKindRefused, TargetSpec, allowed_target_kinds, make_target
from fmquality.targets.policy import ALLOWED_KINDS_ENV, DEFAULT_ALLOWED, check_target_kind, kind_name


def test_the_default_allows_every_kind_but_python():
    assert allowed_target_kinds({}) == DEFAULT_ALLOWED == {"recorded", "bedrock", "lambda", "http", "https"}
    assert allowed_target_kinds({"ENGINE_NAME": "stepfunctions"}) == DEFAULT_ALLOWED


def test_python_is_allowed_by_default_only_on_the_local_engine_never_in_a_lambda_runtime():
    assert "python" in allowed_target_kinds({"ENGINE_NAME": "stepfunctions-local"})
    on_aws = {"ENGINE_NAME": "stepfunctions-local", "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13"}
    assert "python" not in allowed_target_kinds(on_aws)


def test_the_environment_setting_decides_and_a_typo_is_an_error():
    assert allowed_target_kinds({ALLOWED_KINDS_ENV: "bedrock, https"}) == {"bedrock", "https"}
    assert allowed_target_kinds({ALLOWED_KINDS_ENV: "recorded,python"}) == {"recorded", "python"}
    assert allowed_target_kinds({ALLOWED_KINDS_ENV: ""}) == DEFAULT_ALLOWED  # empty = not set (CloudFormation)
    with pytest.raises(ValueError, match=r"unknown target kind\(s\) \['pyhton'\]"):
        allowed_target_kinds({ALLOWED_KINDS_ENV: "bedrock,pyhton"})


def test_http_and_https_are_told_apart():
    assert kind_name(TargetSpec.parse("https://chat.example.com/turn")) == "https"
    assert kind_name(TargetSpec.parse("http://chat.example.com/turn")) == "http"
    with pytest.raises(TargetKindRefused, match="http targets are not allowed"):
        check_target_kind(TargetSpec.parse("http://chat.example.com/turn"), frozenset({"https"}))
    check_target_kind(TargetSpec.parse("https://chat.example.com/turn"), frozenset({"https"}))


def test_make_target_refuses_a_kind_the_deployment_does_not_allow_before_building_it(tmp_path, monkeypatch):
    (tmp_path / "planted_mod.py").write_text("import os\nos.environ['PLANTED_RAN'] = '1'\n"
                                             "def answer(request):\n    return 'x'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("PLANTED_RAN", raising=False)
    with pytest.raises(TargetKindRefused, match="target: python targets are not allowed in this deployment"):
        make_target(TargetSpec.parse("python:planted_mod:answer"), allowed_kinds=DEFAULT_ALLOWED)
    import os

    assert "PLANTED_RAN" not in os.environ  # refused before anything was imported
    assert make_target(TargetSpec.parse("recorded"), allowed_kinds=DEFAULT_ALLOWED).id == "recorded"


class FakeSsm:
    def __init__(self, values):
        self.values = values

    def get_parameter(self, Name, WithDecryption):  # noqa: N803 - boto3's names
        return {"Parameter": {"Name": Name, "Value": self.values[Name]}}


def test_an_ssm_parameter_cannot_point_at_a_refused_kind():
    ssm = FakeSsm({"/chat/prod": json.dumps({"spec": "python:os:getcwd"})})
    with pytest.raises(TargetKindRefused, match="python targets are not allowed"):
        make_target(TargetSpec.parse("ssm:/chat/prod"), lambda service: {"ssm": ssm}[service],
                    allowed_kinds=DEFAULT_ALLOWED)
