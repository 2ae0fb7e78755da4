"""The tool-use scheme: tool usage, keyword quality and error handling (issue 11, item 3).

- tool_usage: ``expected_tools`` share called (by name), ``arguments`` share of those whose call
  matches the expected arguments (subset match, strings and numbers normalised, any call of that
  name), ``no_forbidden_tools`` 0 when a forbidden tool was called. Without expectations: the judge.
- keyword_quality: share of required keywords and facts conveyed, read by ``alignment.match_fact``
  (negation and numbers read, Japanese segmented): "not refundable" does not convey "refundable".
  A fact only partly found (maybe reworded) leaves the score to the judge.
- error_handling: ``no_leak`` 0 when the answer carries error text (``LEAK_PATTERNS``); ``recovery``
  (applies after a failed call) 1 when a later call of the same tool succeeded or the answer tells
  the user plainly that something failed, else 0 (a system error left unhandled).

The total (``total_100``) and the letter grade come from the composite and the profile's bands
(``scoring.composite``), as for every profile with grades.
"""

from __future__ import annotations

import re

from fmquality.config.profile import Profile
from fmquality.domain.case import TestCase
from fmquality.language.alignment import match_fact
from fmquality.schemes.profiles.common import DimensionFinding, arguments_match, units_of
from fmquality.schemes.profiles.scheme import ProfileScheme

MISSING_BELOW = 0.25  # as in research_agent: under a quarter of a fact found is absence

# Shapes of error output, from the formats of common runtimes and APIs (not from the datasets):
# Python tracebacks and exception names, Java/JS stack frames, "SomethingError:"/"Exception:"
# prefixes, HTTP 5xx status lines, JSON error objects, errno-style codes.
LEAK_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("stack frame", re.compile(r"\bat\s+[\w$.<>]+\([\w.]*:\d+\)|\bFile \"[^\"]+\", line \d+")),
    ("exception name", re.compile(r"\b[A-Z]\w*(?:Exception|Error)\b(?::|\s*\()")),
    ("error prefix", re.compile(r"(?:^|\s)(?:Error|Exception|FATAL|panic):\s", re.M)),
    ("HTTP 5xx", re.compile(r"\b(?:HTTP(?:/\d(?:\.\d)?)?\s*5\d\d\b|5\d\d\s+(?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|Server Error))", re.I)),
    ("JSON error object", re.compile(r"\{\s*\"(?:error|errorMessage|errorType|exception)\"\s*:")),
    ("errno code", re.compile(r"\bE(?:CONNRESET|CONNREFUSED|TIMEDOUT|NOTFOUND|PIPE)\b")),
)
# Telling the user plainly that something failed: general English and Japanese expressions of
# inability or failure (a short lexicon of the languages, not of any dataset).
_TOLD = re.compile(r"\b(?:could(?: not|n't)|can(?:not|'t)|unable|was(?: not|n't) able|failed|is (?:down|unavailable)|"
                   r"try again|temporar(?:y|ily))\b|できません|できませんでした|失敗|エラー|時間をおいて|再度お試し|"
                   r"確認できません|取得できません", re.I)


def _finding(profile: Profile, name: str, subs: dict[str, float], evidence: list[str]) -> DimensionFinding:
    weights = profile.dimension(name).sub_scores
    total = sum(weights[k] for k in subs)
    value = sum(weights[k] * v for k, v in subs.items()) / total
    return DimensionFinding(dimension=name, source="check", value=value, sub_scores=subs, evidence=evidence)


def tool_usage_check(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "tool_usage"
    if not (case.expected_tools or case.forbidden_tools):
        return DimensionFinding(dimension=name, source="judge", evidence=["no tool expectations"])
    calls = case.tool_calls
    subs: dict[str, float] = {}
    evidence: list[str] = []
    if case.expected_tools:
        called = [e for e in case.expected_tools if any(c.name == e.name for c in calls)]
        subs["expected_tools"] = len(called) / len(case.expected_tools)
        evidence += [f"{e.name}: {'called' if e in called else 'never called'}" for e in case.expected_tools]
        with_args = [e for e in called if e.arguments]
        if with_args:
            right = [e for e in with_args if any(c.name == e.name and not c.failed and arguments_match(e.arguments, c.arguments)
                                                 for c in calls)]
            subs["arguments"] = len(right) / len(with_args)
            evidence += [f"{e.name}: no successful call with {e.arguments}" for e in with_args if e not in right]
    if case.forbidden_tools:  # only a case that forbids tools can be checked for calling one
        forbidden = sorted({c.name for c in calls if c.name in set(case.forbidden_tools)})
        subs["no_forbidden_tools"] = 0.0 if forbidden else 1.0
        evidence.append("forbidden tool(s) called: " + ", ".join(forbidden) if forbidden
                        else f"none of the forbidden tools ({', '.join(case.forbidden_tools)}) called")
    return _finding(profile, name, subs, evidence)


def keyword_check(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "keyword_quality"
    wanted = list(dict.fromkeys([*case.required_keywords, *case.required_facts, *case.expected_facts]))
    if not wanted:
        return DimensionFinding(dimension=name, source="judge", evidence=["no required keywords or facts"])
    answer = units_of(case.response or "")
    found, partial, evidence = 0, [], []
    for item in wanted:
        m = match_fact(item, answer)
        if m.status == "covered":
            found += 1
        elif m.status == "not_found" and m.score >= MISSING_BELOW:
            partial.append(m.evidence)
            continue
        evidence.append(m.evidence)
    if partial:
        return DimensionFinding(dimension=name, source="judge", evidence=evidence + partial)
    return _finding(profile, name, {name: found / len(wanted)}, evidence)


def keyword_signal(case: TestCase, profile: Profile) -> DimensionFinding:
    """The offline judge's reading of keyword quality when the check left it open (a fact only
    partly found): each required item counts by the share of it the best answer sentence carries
    (1 when covered, 0 when contradicted)."""
    name = "keyword_quality"
    wanted = list(dict.fromkeys([*case.required_keywords, *case.required_facts, *case.expected_facts]))
    if not wanted:
        return DimensionFinding(dimension=name, source="judge", evidence=["no required keywords or facts"])
    answer = units_of(case.response or "")
    parts, evidence = [], []
    for item in wanted:
        m = match_fact(item, answer)
        parts.append(1.0 if m.status == "covered" else 0.0 if m.status == "contradicted" else m.score)
        evidence.append(m.evidence)
    value = sum(parts) / len(parts)
    return DimensionFinding(dimension=name, source="offline", value=round(value, 4), sub_scores={name: round(value, 4)},
                            evidence=evidence)


def leaks(text: str) -> list[str]:
    """The kinds of error output found in a text, with the matched text."""
    return [f"{kind}: {m.group(0).strip()[:60]!r}" for kind, pattern in LEAK_PATTERNS for m in [pattern.search(text or "")] if m]


def _error_handling(case: TestCase) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """What the answer and the call trace show: (settled, read, evidence). ``settled`` holds what a
    check may decide (a leak found; a failed call later repeated successfully, or neither repeated nor
    mentioned); ``read`` what only the judge may take (no leak found, a failure the answer seems to mention)."""
    settled: dict[str, float] = {}
    read: dict[str, float] = {}
    found = leaks(case.response or "")
    if found:
        settled["no_leak"] = 0.0
        evidence = list(found)
    else:
        read["no_leak"] = 1.0
        evidence = ["no error text, stack trace or error object found in the answer"]
    calls = case.tool_calls
    failures = [(i, c) for i, c in enumerate(calls) if c.failed]
    if failures:
        told = _TOLD.search(case.response or "")
        unrecovered = [c for i, c in failures if not any(d.name == c.name and not d.failed for d in calls[i + 1:])]
        if not unrecovered:
            settled["recovery"] = 1.0
            evidence.append(f"{len(failures)} failed call(s), each followed by a successful call of the same tool")
        elif told:
            read["recovery"] = 1.0  # a word like "unavailable" may or may not be about this failure
            evidence += [f"{c.name} failed ({c.error!r}); the answer says {told.group(0)!r}" for c in unrecovered]
        else:
            settled["recovery"] = 0.0
            evidence += [f"{c.name} failed ({c.error!r}), no later call succeeded and the answer does not say so"
                         for c in unrecovered]
    return settled, read, evidence


def error_handling_check(case: TestCase, profile: Profile) -> DimensionFinding:
    settled, read, evidence = _error_handling(case)
    if settled and (not read or min(settled.values()) == 0.0):
        return _finding(profile, "error_handling", settled, evidence)
    # Nothing found wrong and nothing proven right: the judge reads it (the hints go with the request).
    return DimensionFinding(dimension="error_handling", source="judge", evidence=evidence)


def error_handling_signal(case: TestCase, profile: Profile) -> DimensionFinding:
    """The offline judge's reading when the check left error handling open: the leak scan and the
    call trace, each sub-score from what was looked for."""
    settled, read, evidence = _error_handling(case)
    subs = {**read, **settled}
    finding = _finding(profile, "error_handling", subs, evidence)
    return finding.model_copy(update={"source": "offline"})


TOOL_USE = ProfileScheme(
    name="tool-use",
    checks={
        "tool_usage": tool_usage_check,
        "keyword_quality": keyword_check,
        "error_handling": error_handling_check,
    },
    offline_signals={
        "keyword_quality": keyword_signal,
        "error_handling": error_handling_signal,
    },
)
