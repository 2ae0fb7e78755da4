"""The research-agent scheme: deterministic checks and offline signals (issue 11, item 2).

Checks (they settle a dimension only from evidence they found; with none they return None and the
judge decides, never a default full mark):

- citation_accuracy: each citation's ``source_id`` must name a source of the case (``sources`` ids, or
  ``chunk-<n>`` for the n-th retrieved chunk, 1-based); a dangling one is a finding. The cited sentence
  must be supported by the source's text: ``support`` (share of its content words in the best source
  sentence, tempered by word pairs in order) of at least ``SUPPORTED`` with its numbers in the source
  is supported; below ``UNSUPPORTED``, or with a number the source does not give, unsupported; in
  between the check is silent (a paraphrase may score there).
- completeness: each required fact (``required_facts`` and ``expected_facts``) read with
  ``alignment.match_fact`` (negation and numbers read): covered, contradicted (stated with the opposite
  meaning), or missing when the best answer sentence carries less than ``MISSING_BELOW`` of it.
  Partly found facts are the judge's.
- tool_efficiency (applies only with tool calls): identical successful calls repeated, failed calls
  retried unchanged, successful calls whose results nothing in the answer uses.

Offline signals (for the offline judge; the Bedrock judge decides in production):

- factual_accuracy: grounding of each claim sentence of the answer in the source texts, numbers
  checked, polarity against the best-matching source sentence;
- source_quality: cited sources' relevance to the question, kinds and variety.

Levels map findings onto the profile's five described levels.
"""

from __future__ import annotations

from fmquality.config.profile import Profile
from fmquality.domain.case import Source, TestCase, ToolCall
from fmquality.language.alignment import Unit, is_claim, match_fact, recall, significant_numbers, unit_of
from fmquality.language.negation import polarity_differs
from fmquality.schemes.profiles.common import DimensionFinding, call_key, leaves, support, units_of
from fmquality.schemes.profiles.scheme import ProfileScheme

SUPPORTED = 0.5  # at least half the cited sentence's content, in order, is in its source
UNSUPPORTED = 0.25  # under a quarter: the source is about something else
MISSING_BELOW = 0.25  # a required fact whose best sentence carries under a quarter of it is absent
USED = 0.4  # a result text carries this much of an answer sentence: the result was used
# Source kinds by how much a research answer can lean on them (papers and the curated knowledge
# base over the open web); "other" is unattributed.
KIND_STRENGTH = {"paper": 2, "kb": 2, "tool": 1, "web": 1, "other": 0}


def _level(profile: Profile, dimension: str, name: str, source: str, evidence: list[str]) -> DimensionFinding:
    value = profile.dimension(dimension).level(name).value
    return DimensionFinding(dimension=dimension, source=source, level=name, value=value,
                            sub_scores={dimension: value}, evidence=evidence)


def _judge(dimension: str, why: str) -> DimensionFinding:
    return DimensionFinding(dimension=dimension, source="judge", evidence=[why])


def _numbers(units: list[Unit]) -> set[float]:
    return {v for u in units for _, v in u.numbers}


def stray_specifics(claim: Unit, evidence: list[Unit]) -> list[str]:
    """The claim's numbers and dates no evidence sentence gives (a number also counts as given when
    its value as written is there: "a year" is 365 days and 1 year), as in offline grounding."""
    values = _numbers(evidence)
    written = {v for k, v in claim.numbers if k == "as written"}
    out = [f"{v:g}" for _, v in sorted(significant_numbers(claim)) if v not in values and not written & values]
    dates = [d for e in evidence for d in e.dates]
    out += [f"date {d.month}/{d.day}" for d in claim.dates if not any(d.same_day(e) for e in dates)]
    return out


def _source_texts(case: TestCase) -> dict[str, str | None]:
    # The title is part of what a source says ("... in a cohort of 380,000 adults").
    texts: dict[str, str | None] = {s.id: f"{s.title}. {s.text}" if s.text else None for s in case.sources}
    for index, chunk in enumerate(case.retrieved_chunks, start=1):
        texts.setdefault(f"chunk-{index}", chunk)
    return texts


# --------------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------------


def citation_check(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "citation_accuracy"
    if not case.citations:
        return _judge(name, "no citations to check")
    texts = _source_texts(case)
    dangling, unsupported, supported, unchecked = [], [], [], []
    for cite in case.citations:
        label = f"[{cite.source_id}] {cite.sentence.strip()[:70]!r}"
        if cite.source_id not in texts:
            dangling.append(f"{label}: names a source that was never retrieved")
            continue
        text = texts[cite.source_id]
        if not text:
            unchecked.append(label)
            continue
        evidence = units_of(text)
        claims = [u for u in units_of(cite.sentence) if is_claim(u)] or units_of(cite.sentence)
        worst = min(support(c, evidence) for c in claims)
        stray = [x for c in claims for x in stray_specifics(c, evidence)]
        if stray or worst < UNSUPPORTED:
            why = f"{', '.join(stray)} not in the source" if stray else f"{worst:.0%} of it in the source"
            unsupported.append(f"{label}: not supported by {cite.source_id} ({why})")
        elif worst >= SUPPORTED:
            supported.append(label)
        else:
            unchecked.append(label)
    n = len(case.citations)
    evidence = dangling + unsupported + ([f"{len(supported)} citation(s) supported by their source"] if supported else [])
    if dangling:
        return _level(profile, name, "failed" if len(dangling) / n > 0.5 else "poor", "check", evidence)
    if unsupported:
        level = "acceptable" if len(unsupported) == 1 and n >= 3 else "poor" if len(unsupported) / n <= 0.5 else "failed"
        return _level(profile, name, level, "check", evidence)
    if unchecked:
        return _judge(name, f"{len(unchecked)} citation(s) only partly supported or without source text: "
                      + "; ".join(unchecked[:3]))
    return _level(profile, name, "excellent", "check", evidence)


def completeness_check(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "completeness"
    facts = list(dict.fromkeys([*case.required_facts, *case.expected_facts]))
    if not facts:
        return _judge(name, "no required facts")
    answer = units_of(case.response or "")
    covered, contradicted, missing, partial = [], [], [], []
    for fact in facts:
        m = match_fact(fact, answer)
        if m.status == "covered":
            covered.append(m.evidence)
        elif m.status == "contradicted":
            contradicted.append(m.evidence)
        elif m.score < MISSING_BELOW:
            missing.append(m.evidence)
        else:
            partial.append(m.evidence)
    n = len(facts)
    evidence = contradicted + missing + covered
    if contradicted or missing:
        # Partly found facts are counted as present: the level is the best the answer can get.
        if len(missing) == n:
            level = "failed"
        elif contradicted or len(missing) >= 2 or len(missing) / n > 0.5:
            level = "poor"
        else:
            level = "acceptable"
        return _level(profile, name, level, "check", evidence + [f"{p} (left to the judge)" for p in partial])
    if partial:
        return _judge(name, "facts only partly found (maybe reworded): " + "; ".join(partial))
    return _level(profile, name, "excellent", "check", evidence)


def _result_used(call: ToolCall, answer: list[Unit], answer_text: str, cited: set[str]) -> bool:
    """A result is used when the answer cites what the call fetched or listed, carries a sentence of
    its text, or repeats one of its values."""
    if any(isinstance(v, str) and v in cited for v in leaves(call.arguments)):
        return True
    for leaf in leaves(call.result):
        if isinstance(leaf, str):
            if leaf in cited:
                return True
            units = units_of(leaf)
            if len(units) and any(support(a, units) >= USED for a in answer if is_claim(a)):
                return True
            if len(leaf) >= 3 and leaf.casefold() in answer_text:
                return True
        elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
            if any(abs(v - leaf) < 1e-9 for u in answer for _, v in u.numbers):
                return True
    return False


def tool_efficiency_check(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "tool_efficiency"
    calls = case.tool_calls
    if not calls:
        return DimensionFinding(dimension=name, source="not_applicable", evidence=["no tool calls"])
    answer = units_of(case.response or "")
    answer_text = (case.response or "").casefold()
    cited = {c.source_id for c in case.citations}
    wasted: list[str] = []
    seen_ok: set[str] = set()
    failed: set[str] = set()
    for index, call in enumerate(calls, start=1):
        key = call_key(call.name, call.arguments)
        where = f"call {index} {call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"
        if key in failed:
            wasted.append(f"{where}: retries a failed call unchanged")
        elif not call.failed and key in seen_ok:
            wasted.append(f"{where}: repeats an identical earlier call")
        elif not call.failed and call.result is not None and not _result_used(call, answer, answer_text, cited):
            wasted.append(f"{where}: its result is not used in the answer")
        (failed if call.failed else seen_ok).add(key)
    n = len(calls)
    if not wasted:
        return _level(profile, name, "excellent", "check",
                      [f"{n} call(s), none repeated, every successful result used in the answer"])
    level = ("failed" if len(wasted) == n else "poor" if len(wasted) >= 3 or len(wasted) / n >= 0.5
             else "good" if len(wasted) == 1 else "acceptable")
    return _level(profile, name, level, "check", wasted)


# --------------------------------------------------------------------------------------------------
# Offline signals
# --------------------------------------------------------------------------------------------------


def factual_accuracy_signal(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "factual_accuracy"
    texts = [t for t in _source_texts(case).values() if t]
    if not texts:
        return _judge(name, "no source texts to ground the answer in")
    evidence = [u for t in texts for u in units_of(t)]
    claims = [u for u in units_of(case.response or "") if is_claim(u)]
    if not claims:
        return _judge(name, "the answer asserts nothing checkable")
    problems, supports = [], []
    for claim in claims:
        stray = stray_specifics(claim, evidence)
        best = max(evidence, key=lambda e: len(claim.tokens & e.tokens))
        s = support(claim, evidence)
        supports.append(s)
        if stray:
            problems.append(f"{claim.text.strip()[:70]!r}: {', '.join(stray)} in no source")
        elif s >= UNSUPPORTED and polarity_differs(claim, best):
            problems.append(f"{claim.text.strip()[:70]!r}: opposite polarity to {best.text.strip()[:70]!r}")
    mean = sum(supports) / len(supports)
    why = [f"{len(claims)} claim sentence(s), {mean:.0%} of their wording in the sources on average", *problems]
    if problems:
        return _level(profile, name, "failed" if len(problems) / len(claims) > 0.5 else "poor", "offline", why)
    level = "excellent" if mean >= 0.7 else "good" if mean >= 0.55 else "acceptable" if mean >= 0.4 else "poor"
    return _level(profile, name, level, "offline", why)


def source_quality_signal(case: TestCase, profile: Profile) -> DimensionFinding:
    name = "source_quality"
    by_id = {s.id: s for s in case.sources}
    cited = [by_id[c.source_id] for c in case.citations if c.source_id in by_id]
    used: list[Source] = [by_id[i] for i in dict.fromkeys(s.id for s in cited)]
    if not used:
        return _judge(name, "no cited source with a known kind")
    query = unit_of(case.query)
    answer = units_of(case.response or "")
    off_topic = []
    for s in used:
        units = units_of(f"{s.title}. {s.text or ''}")
        whole = unit_of(f"{s.title} {s.text or ''}")
        if recall(query, whole) < 0.2 and not any(support(a, units) >= SUPPORTED for a in answer if is_claim(a)):
            off_topic.append(f"{s.id} ({s.title!r}) shares little with the question and supports no answer sentence")
    strength = sum(KIND_STRENGTH[s.kind] for s in used) / len(used)
    why = [f"{len(used)} cited source(s): " + ", ".join(f"{s.id} ({s.kind})" for s in used), *off_topic]
    if off_topic:
        return _level(profile, name, "poor" if len(off_topic) / len(used) > 0.5 else "acceptable", "offline", why)
    if strength < 1:
        return _level(profile, name, "acceptable", "offline", why + ["mostly unattributed sources"])
    if len(used) == 1 and len(case.sources) > 1:
        return _level(profile, name, "good", "offline", why + ["rests on one source where more were retrieved"])
    return _level(profile, name, "excellent" if strength >= 1.5 or len(used) >= 2 else "good", "offline", why)


# A check settles its dimension only with evidence and only when the profile lists it in
# ``check_settled``; a signal is the offline judge's reading when the checks left the dimension open.
RESEARCH_AGENT = ProfileScheme(
    name="research-agent",
    checks={
        "completeness": completeness_check,
        "tool_efficiency": tool_efficiency_check,
        "citation_accuracy": citation_check,
    },
    offline_signals={
        "factual_accuracy": factual_accuracy_signal,
        "source_quality": source_quality_signal,
    },
)
