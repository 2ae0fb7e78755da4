"""The verdict cache: an unchanged case costs no judge call when it is scored again.

Key: sha256 over (judge model id, rubric version, dimension, sha256 of the exact prompt text). The
prompt text is what the judge would send (``judge.request_text``: for Bedrock the canonical JSON
of the whole Converse request, so the system text, the case, the response under evaluation, the
sub-scores asked for, the tool schema and the inference settings are all in it; for the offline and
scripted judges the canonical JSON of the request). A changed response, rubric version, model or
check finding therefore makes a new key and a new call.

Only successful verdicts are stored; errors, throttles and malformed output never are, so a failure
is retried on the next run. A hit returns the verdict with ``calls=0`` and
``usage.cached_verdicts=1``.

Stores (the ``VerdictStore`` protocol):
- ``LocalVerdictStore(folder)``, here: one JSON file per key under ``.fmquality-cache/verdicts/``
  (the CLI's default for the Bedrock judge; the folder is gitignored);
- ``fmquality.adapters.verdicts.DynamoVerdictStore(table_name, boto3_client)``: the evaluation
  table, item ``pk=VERDICT#<hash>, sk=VERDICT`` with ``expires_at`` (the table's TTL attribute).

Both keep entries ``ttl_days`` (30 by default) and ignore expired ones. A store that fails (disk,
DynamoDB) never fails the scoring: the read is treated as a miss and the write is skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from fmquality.judges.base import (
    CombinedJudgeOutcome,
    CombinedJudgeRequest,
    JudgeOutcome,
    JudgeRequest,
    JudgeVerdict,
    canonical_request_json,
    supports_combined,
)
from fmquality.domain.scores import JudgeUsage

if TYPE_CHECKING:
    from fmquality.config.rubric import Rubric

logger = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path(".fmquality-cache") / "verdicts"
DEFAULT_TTL_DAYS = 30
_DAY_S = 86_400


def verdict_cache_key(model_id: str, rubric_version: str, dimension: str, prompt_text: str) -> str:
    prompt_sha = hashlib.sha256(prompt_text.encode("utf-8")).hexdigest()
    material = json.dumps([model_id, rubric_version, dimension, prompt_sha], separators=(",", ":"))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class VerdictStore(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, entry: dict[str, Any]) -> None: ...


class LocalVerdictStore:
    """One JSON file per key, written atomically (temp file + rename), so concurrent workers and an
    interrupted run never leave a half-written entry."""

    def __init__(
        self,
        folder: str | Path | None = None,
        ttl_days: float = DEFAULT_TTL_DAYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.folder = Path(folder) if folder is not None else Path.cwd() / DEFAULT_CACHE_DIR
        self.ttl_s = ttl_days * _DAY_S
        self._clock = clock

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("unreadable cached verdict %s: %s", key, exc)
            return None
        if not isinstance(entry, dict) or entry.get("expires_at", 0) <= self._clock():
            return None
        return entry

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every unexpired (key, entry) in the folder (the state-machine engine seeds its table with them)."""
        for path in sorted(self.folder.glob("*/*.json")):
            entry = self.get(path.stem)
            if entry is not None:
                yield path.stem, entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**entry, "expires_at": int(self._clock() + self.ttl_s)}
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class CachingJudge:
    """Any judge, behind the verdict cache."""

    def __init__(self, inner: Any, store: VerdictStore) -> None:
        self.inner = inner
        self.store = store
        self.name = inner.name
        self.model_id = inner.model_id
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0

    @property
    def supports_combined(self) -> bool:  # type: ignore[override]
        return supports_combined(self.inner)

    def set_observer(self, observer: Any) -> None:
        setter = getattr(self.inner, "set_observer", None)
        if setter is not None:
            setter(observer)

    def request_text(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        text_of = getattr(self.inner, "request_text", None)
        return text_of(request, rubric) if text_of is not None else canonical_request_json(request)

    def key_for(self, request: JudgeRequest | CombinedJudgeRequest, rubric: "Rubric") -> str:
        dimension = request.cache_dimension if isinstance(request, CombinedJudgeRequest) else request.dimension
        return verdict_cache_key(self.model_id, request.rubric_version, dimension, self.request_text(request, rubric))

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "writes": self.writes}

    # -- judging -------------------------------------------------------------------------------------

    def judge(self, request: JudgeRequest, rubric: "Rubric") -> JudgeOutcome:
        key = self.key_for(request, rubric)
        entry = self._get(key)
        if entry is not None and entry.get("kind") == "single":
            try:
                verdict = JudgeVerdict.model_validate(entry["verdict"])
            except (KeyError, ValidationError):
                verdict = None
            if verdict is not None and all(n in verdict.sub_scores for n in request.sub_scores):
                self._count("hits")
                return JudgeOutcome(verdict=verdict, calls=0, usage=JudgeUsage(cached_verdicts=1),
                                    from_cache=True, prompt=f"[cached verdict {key[:16]}]")
        self._count("misses")
        outcome = self.inner.judge(request, rubric)
        if outcome.ok and not outcome.from_cache:
            self._put(key, {"kind": "single", "dimension": request.dimension,
                            "verdict": outcome.verdict.model_dump(mode="json")}, request)
        return outcome

    def judge_combined(self, request: CombinedJudgeRequest, rubric: "Rubric") -> CombinedJudgeOutcome:
        if not supports_combined(self.inner):
            raise TypeError(f"judge {self.inner.name!r} has no combined mode")
        key = self.key_for(request, rubric)
        entry = self._get(key)
        if entry is not None and entry.get("kind") == "combined":
            try:
                verdicts = {d: JudgeVerdict.model_validate(v) for d, v in entry["verdicts"].items()}
            except (KeyError, AttributeError, ValidationError):
                verdicts = None
            if verdicts is not None and all(
                d in verdicts and all(n in verdicts[d].sub_scores for n in names)
                for d, names in request.sub_scores().items()
            ):
                self._count("hits")
                return CombinedJudgeOutcome(verdicts=verdicts, calls=0, usage=JudgeUsage(cached_verdicts=1),
                                            from_cache=True, prompt=f"[cached verdict {key[:16]}]")
        self._count("misses")
        outcome = self.inner.judge_combined(request, rubric)
        if outcome.ok and not outcome.from_cache:
            self._put(key, {"kind": "combined", "dimension": request.cache_dimension,
                            "verdicts": {d: v.model_dump(mode="json") for d, v in outcome.verdicts.items()}},
                      request)
        return outcome

    # -- store access that never fails the scoring ---------------------------------------------------

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def _get(self, key: str) -> dict[str, Any] | None:
        try:
            return self.store.get(key)
        except Exception as exc:  # noqa: BLE001 - a cache read failure is a miss
            logger.warning("verdict cache read failed (%s): treated as a miss", exc)
            return None

    def _put(self, key: str, entry: dict[str, Any], request: JudgeRequest | CombinedJudgeRequest) -> None:
        entry = {**entry, "model_id": self.model_id, "rubric_version": request.rubric_version,
                 "created_at": int(time.time())}
        try:
            self.store.put(key, entry)
        except Exception as exc:  # noqa: BLE001 - a cache write failure only costs a future call
            logger.warning("verdict cache write failed (%s): not cached", exc)
            return
        self._count("writes")
