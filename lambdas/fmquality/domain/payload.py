"""The state machine's payload budget: every state of a run stays under Step Functions' 256 KiB by
construction (issue 31, item 5). A state that passes it fails with ``States.DataLimitExceeded``, which
no Catch can take: the item would vanish into the Map's failure tolerance.

What a Map child's state carries, at most:

* the case, inline only while its JSON is at most ``INLINE_CASE_BYTES``; a larger one is written by
  Prepare to ``runs/<run_id>/cases/<n>.json`` and the state carries a stub naming it (``run.layout``),
  which the handlers read back (``handlers.resolved_item``). So the evidence is never in the state and
  its limit (``limits.max_evidence_chars``) is set by scoring time, not by the payload;
* the answer once (a generated answer is in the item, or for a stub in its generation record);
* one DimensionScore per dimension, each cut for the state by ``for_state`` to ``DIMENSION_BYTES``
  (the judge prompt and raw reply to ``STATE_TRACE_CHARS`` each, then evidence and reasons). A cut score
  is stored whole first, at ``runs/<run_id>/judge/<arm>/<test_id>/<dimension>.json``, and its cut copy
  names it in ``judge_trace_uri`` (``run.layout.score_for_state``): prompts and raw replies are stored,
  not passed, and the result a run keeps says where the full trace is;
* ``OVERHEAD_BYTES`` of keys, ids, the generation record and the Catch's error.

``max_response_chars`` is what is left for the answer at ``BYTES_PER_CHAR`` (UTF-8's worst); the rubric
refuses a ``limits.max_response_chars`` above it for its profile's dimension count.
"""

from __future__ import annotations

import json
from typing import Any

from fmquality.domain.scores import DimensionScore

STATE_LIMIT_BYTES = 256 * 1024
INLINE_CASE_BYTES = 16 * 1024
OVERHEAD_BYTES = 8 * 1024
BYTES_PER_CHAR = 4  # UTF-8 of any character; Japanese takes 3
STATE_TRACE_CHARS = 1_500
DIMENSION_BYTES = 20 * 1024
EVIDENCE_KEEP_CHARS = 300
RATIONALE_KEEP_CHARS = 1_000  # an unscored reason, a hard failure's detail


def json_bytes(value: Any) -> int:
    """A value's size as Step Functions counts it: its JSON as a UTF-8 string."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def max_response_chars(dimensions: int) -> int:
    """The longest answer a child's state can carry with ``dimensions`` scores beside it."""
    left = STATE_LIMIT_BYTES - INLINE_CASE_BYTES - OVERHEAD_BYTES - dimensions * DIMENSION_BYTES
    return max(0, left // BYTES_PER_CHAR)


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    marker = f" ...[{len(text) - limit} chars cut for the state]... "
    keep = max(0, limit - len(marker))
    return text[: keep * 5 // 8] + marker + text[len(text) - (keep - keep * 5 // 8):]


# What is kept for the state, step by step until the score fits: (trace chars, evidence quotes, chars per
# quote, chars per reason). The last step keeps the verdict and a line of each.
_STEPS = ((STATE_TRACE_CHARS, 20, EVIDENCE_KEEP_CHARS, RATIONALE_KEEP_CHARS), (500, 10, 150, 300), (0, 3, 80, 120))


def for_state(score: DimensionScore, trace_uri: str | None = None) -> DimensionScore:
    """The score as a state carries it: at most ``DIMENSION_BYTES``. The judge's prompt and raw reply
    are cut first, then the evidence quotes and the reasons' text, only as far as needed; the score,
    sub-scores, status and hard failures' rules never change. A cut copy carries ``trace_uri`` (where
    the caller stores the whole score) as its ``judge_trace_uri``, counted in its budget; a score that
    fits is returned as it is."""
    cut = score
    for trace, quotes, quote_chars, reason_chars in _STEPS:
        if json_bytes(cut.model_dump(mode="json")) <= DIMENSION_BYTES:
            return cut
        cut = score.model_copy(update={
            "judge_trace_uri": trace_uri,
            "judge_prompt": _cut(score.judge_prompt, trace) if trace else None,
            "judge_raw": _cut(score.judge_raw, trace) if trace else None,
            "evidence": [_cut(e, quote_chars) for e in score.evidence[:quotes]],
            "unscored_reason": _cut(score.unscored_reason, reason_chars),
            "abstained": {name: _cut(why, reason_chars) for name, why in score.abstained.items()},
            "hard_failures": [h.model_copy(update={"detail": _cut(h.detail, reason_chars)})
                              for h in score.hard_failures],
        })
    return cut
