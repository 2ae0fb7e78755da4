"""Test-wide settings: fake AWS credentials and a region, so nothing can reach a real endpoint."""

from __future__ import annotations

import os

import pytest

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "MangaAssist/Evaluation",
    "POWERTOOLS_SERVICE_NAME": "fmquality-tests",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
}
os.environ.update(_FAKE_ENV)
# Never pick up a developer's real profile or config.
os.environ.pop("AWS_PROFILE", None)
os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull


@pytest.fixture(scope="session")
def rubric():
    from fmquality.config.rubric import load_rubric

    return load_rubric()
