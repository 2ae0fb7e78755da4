"""ModelErrorException (HTTP 424, "the request failed due to an error while processing the model") is
transient like throttling and 5xx: retried with full-jitter backoff within ``max_attempts``, and
reported as a failure (not as throttling) once they are spent."""

from __future__ import annotations

import boto3

from fmquality.judges.bedrock.judge import MISCONFIGURATION_CODES, TRANSIENT_CODES
from tests.unit.test_bedrock_judge import Harness, load_event, make_case, make_request


def converse_errors() -> dict[str, int]:
    """Converse's modelled errors and their HTTP status, from botocore's own service model."""
    model = boto3.client("bedrock-runtime", region_name="us-east-1").meta.service_model
    return {shape.name: shape.metadata["error"]["httpStatusCode"]
            for shape in model.operation_model("Converse").error_shapes}


def test_the_service_model_names_model_error_exception_with_http_424():
    errors = converse_errors()
    assert errors["ModelErrorException"] == 424
    assert "ModelErrorException" in TRANSIENT_CODES
    # Every modelled Converse error is classified: retried, or a client error that is not.
    not_retried = {"AccessDeniedException", "ResourceNotFoundException", "ValidationException"}
    assert set(errors) - {"ThrottlingException"} - TRANSIENT_CODES == not_retried
    # ... and each of those is the judge's configuration, the same for every item: a run error.
    assert not_retried <= MISCONFIGURATION_CODES


def model_error(h: Harness) -> None:
    h.stubber.add_client_error("converse", service_error_code="ModelErrorException",
                               service_message="The request failed due to an error while processing the model.",
                               http_status_code=424)


def test_a_model_error_is_retried_with_backoff_and_then_scored(rubric):
    with Harness() as h:
        model_error(h)
        h.stubber.add_response("converse", load_event("converse_record_verdict.json"))
        outcome = h.judge.judge(make_request(make_case(), rubric), rubric)
        h.stubber.assert_no_pending_responses()
    assert outcome.ok and outcome.calls == 2 and len(h.delays) == 1
    assert 0.0 <= h.delays[0] <= rubric.judge.base_delay_s


def test_model_errors_until_exhausted_are_a_failure_not_throttling(rubric):
    with Harness(max_attempts=3) as h:
        for _ in range(3):
            model_error(h)
        outcome = h.judge.judge(make_request(make_case(), rubric), rubric)
        h.stubber.assert_no_pending_responses()
    assert outcome.verdict is None and outcome.calls == 3 and len(h.delays) == 2
    assert outcome.error == "judge failed after 3 attempts: ModelErrorException"
    assert not outcome.throttled
