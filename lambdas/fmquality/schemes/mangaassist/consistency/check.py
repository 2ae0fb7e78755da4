"""Consistency: does the answer agree with itself, with earlier assistant turns and with the persona?

Checks settle a sub-score only from what they found:
- intra_turn: one subject given two values in one answer (a product's price or stock status, a
  policy's number under the same conditions, a charge's timing), or one thing both granted and
  refused for the shopper's case, is a contradiction (0). Otherwise the judge reads an answer of several claims;
  an answer of one claim has nothing to contradict (not applicable).
- cross_turn: "the second one" resolved to the right (1) or the wrong (0) listed item, or a value
  that silently differs from what an earlier assistant turn said, settle it; otherwise the judge
  decides. Not applicable without earlier assistant turns.
- persona: a disclosure of being an AI, a bot or a language model, or another assistant's or model
  vendor's name, is a break (0). Otherwise the judge reads answers that say what the assistant is;
  an answer that never does gives nothing to judge (not applicable).
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache

from fmquality.language.alignment import comparable_pairs, read_units
from fmquality.claims import eligibility
from fmquality.claims.charge_timing import timing_flips
from fmquality.claims.arithmetic import AmountsInPlay
from fmquality.claims.commerce import amounts_in_play
from fmquality.claims.reading import Reading, reading_of
from fmquality.language.negation import EXCEPTION_CLAUSE, conditions_in, expand_contractions, is_conditional
from fmquality.claims.policy import (
    ValueStatement,
    conflicting_values,
    knowledge_policies,
    context_topic,
    conversation_topic,
    shopper_numbers,
    subjects_of,
    value_statements,
)
from fmquality.claims.ordinals import ordinal_reference, resolve_ordinal
from fmquality.claims.grader_address import grader_address
from fmquality.claims.orders import stated_order_statuses
from fmquality.scoring.plan import CheckReport
from fmquality.domain.scores import HardFailure
from fmquality.domain.case import TestCase
from fmquality.config.rubric import Rubric
from fmquality.language.refusal import declines, sentence_around
from fmquality.language.numbers import extract_prices
from fmquality.language.text import has_japanese, normalize, split_sentences

NAME = "consistency"

# --------------------------------------------------------------------------------------------------
# intra_turn: values and permissions stated both ways
# --------------------------------------------------------------------------------------------------

_CLAUSE_START = re.compile(r"[;；]|,\s*(?:and|but|while|whereas)\b|\b(?:but|whereas|while)\b|、(?:ただし|一方)")
_MODAL = re.compile(r"\b(can|may|will|could)\s+(not\s+|never\s+)?(?:be\s+)?(?:[a-z]+ly\s+)?([a-z]{4,})")
_JA_MODAL = re.compile(r"([\u4e00-\u9fff\u30a0-\u30ff]{2,6})(?:が|は|も|を)?(?:でき|いただけ|可能で|承れ)(ます|ません|す|ない)")


def _stem_verb(word: str) -> str:
    for suffix in ("ed", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 3:
            return word[: -len(suffix)]
    return word


def permission_flips(text: str, query: str) -> list[str]:
    """A thing both granted and refused for the shopper's case: "you can return it" ... "opened items
    cannot be returned" when the shopper said they opened it. A grant without conditions and a refusal
    whose conditions the shopper's own situation meets (or the same conditions on both) contradict."""
    query_conditions = conditions_in(normalize(query))
    claims: dict[str, dict[bool, list[frozenset[str]]]] = defaultdict(lambda: {True: [], False: []})
    for sentence in split_sentences(text):
        norm = expand_contractions(normalize(sentence))
        conditional = is_conditional(norm)

        def conditions_of(start: int, end: int) -> frozenset[str]:
            # The modal's own clause ("unopened items can be returned, and opened items cannot" gives
            # each its own condition); what follows "unless" is an exception, not a condition.
            before = _CLAUSE_START.split(norm[:start])[-1]
            after = _CLAUSE_START.split(norm[end:])[0]
            found = conditions_in(EXCEPTION_CLAUSE.split(before + norm[start:end] + after)[0])
            return found | {"conditional"} if conditional else found

        for m in _MODAL.finditer(norm):
            claims[f"{m.group(1)} {_stem_verb(m.group(3))}"][m.group(2) is None].append(conditions_of(m.start(), m.end()))
        for m in _JA_MODAL.finditer(norm):
            claims[m.group(1)][m.group(2) not in ("ません", "ない")].append(conditions_of(m.start(), m.end()))
    out: list[str] = []
    for claim, sides in claims.items():
        for yes in sides[True]:
            for no in sides[False]:
                # Read completely only when the refusal names its conditions: the same as the grant's,
                # or ones the shopper said they meet against an unconditional grant. A refusal with
                # no condition word found may carry one the vocabulary lacks ("orders that include a
                # pre-order"): that is the judge's to read.
                if no and "conditional" not in no and (yes == no or (not yes and no <= query_conditions)):
                    out.append(f"'{claim}' is both granted and refused for the shopper's case")
    return list(dict.fromkeys(out))


# Order states that cannot both hold of one order: sent and not yet sent.
_EXCLUSIVE_STATES = ({"processing", "shipped"}, {"processing", "delivered"}, {"cancelled", "shipped"},
                     {"cancelled", "delivered"})


def order_status_flips(case: TestCase, reading: Reading) -> list[str]:
    """One order said to be in two states that exclude each other ("shipped on Nov 8" ... "hasn't
    left our warehouse yet"), when the page shows a single order whose items are not in several states."""
    page = case.page_context.model_dump(exclude_none=True)
    order = page.get("order")
    if not isinstance(order, dict) or page.get("orders") or any(
            isinstance(v, list) and v and isinstance(v[0], dict) and "status" in v[0] for v in order.values()):
        return []
    stated = stated_order_statuses(reading.text)
    return [f"the order is said to be both {' and '.join(sorted(pair))}" for pair in _EXCLUSIVE_STATES if pair <= stated]


def _contradiction(report: CheckReport, rule: str, sub_score: str, details: list[str]) -> None:
    for detail in details:
        report.hard_failures.append(HardFailure(rule=rule, dimension=NAME, sub_score=sub_score, detail=detail))


def _subject_name(statement: ValueStatement) -> str:
    _, _, rest = statement.subject.partition(":")
    return f"the {rest.split(':')[0].replace('_', ' ')} policy"


def _known_values(case: TestCase) -> set[tuple[str, str]]:
    """(subject, value) of the single policy values the retrieved knowledge itself gives."""
    return {(f"policy:{n.topic}:{n.unit}", f"{n.low:g}") for n in knowledge_policies(case) if n.low == n.high}


def _worked_out_beside(pool: Callable[[], AmountsInPlay], a: ValueStatement, b: ValueStatement,
                       known: set[tuple[str, str]]) -> bool:
    """One of two amounts is the knowledge's own value and the other what the answer's arithmetic
    makes of the amounts in play (the 130円 still missing to the 2,000円 minimum): arithmetic beside
    the policy, not a second value of it."""
    unit = a.subject.rsplit(":", 1)[-1]
    if unit not in ("usd", "jpy"):
        return False
    return any((x.subject, x.value) in known and pool().derives(float(y.value), unit.upper()) for x, y in ((a, b), (b, a)))


def _intra_turn(case: TestCase, reading: Reading, report: CheckReport) -> None:
    statements = value_statements(reading, context_topic(case.query), shopper_numbers(case))
    # Two values the retrieved knowledge itself gives one subject (the usual 1% and a campaign's 2%)
    # are the knowledge's distinction, not the answer contradicting itself.
    known = _known_values(case)
    pool = lru_cache(maxsize=1)(lambda: amounts_in_play(case, reading).with_amounts(extract_prices(reading.text)))
    found = [f"{_subject_name(a)} is stated as {a.shown!r} and as {b.shown!r}"
             for a, b in conflicting_values(statements, statements)
             if not {(a.subject, a.value), (b.subject, b.value)} <= known
             and not _worked_out_beside(pool, a, b, known)]
    found += permission_flips(reading.text, case.query)
    found += order_status_flips(case, reading)
    found += timing_flips(reading.text)
    said = eligibility.scopes(reading.text)
    found += [eligibility.describe(a, b) for a, b in eligibility.conflicts(said, said) if said.index(a) < said.index(b)]
    units = read_units(reading.text)
    if found:
        report.set("intra_turn", 0.0, *found)
        _contradiction(report, "self_contradiction", "intra_turn", found)
    elif comparable_pairs(units, units, lambda u: subjects_of(case, u.text), same_text=True):
        report.ask_judge("intra_turn")
    else:
        report.skip("intra_turn", "no two claims about the same thing: nothing to contradict")


# --------------------------------------------------------------------------------------------------
# cross_turn
# --------------------------------------------------------------------------------------------------

# The shopper or the page says the facts changed since the earlier answer.
_CHANGE_SIGNALS = re.compile(r"\b(changed?|update[ds]?|new price|price drop|restock(?:ed)?|back in stock|anymore)\b"
                             r"|値下げ|値上げ|再入荷|変更|今は")
# The answer says it is correcting or updating what it said.
_ACKNOWLEDGEMENT = re.compile(r"\b(correction|sorry|apolog\w*|mistake|updated?|changed|now|actually|earlier)\b"
                              r"|訂正|失礼|申し訳|変更|現在|先ほど")


# "As I mentioned", 「先ほども申し上げましたとおり」: the answer claims it says the same, the opposite of a correction.
_AS_SAID = re.compile(r"\bas i (?:mentioned|said|noted|explained)(?: (?:earlier|before))?\b|先ほども?(?:申し上げ|お伝えし|ご案内し)(?:ました|た)(?:とおり|通り)")


def _cross_turn(case: TestCase, reading: Reading, report: CheckReport) -> None:
    earlier = [m.content for m in case.conversation_history if m.role == "assistant"]
    if not earlier:
        report.skip("cross_turn", "no earlier assistant turn")
        return
    results: list[tuple[float, str, str]] = []  # (score, evidence, the rule a 0 breaks)
    reference = ordinal_reference(case)
    if reference is not None:
        outcome, evidence = resolve_ordinal(reference, reading)
        if outcome in ("target", "other"):
            results.append((1.0 if outcome == "target" else 0.0, evidence[0], "wrong_reference"))
    page_extra = " ".join(str(v) for v in (case.page_context.model_extra or {}).values())
    change = _CHANGE_SIGNALS.search(normalize(case.query + " " + page_extra)) is not None
    acknowledged = _ACKNOWLEDGEMENT.search(_AS_SAID.sub(" ", reading.norm)) is not None
    shoppers = shopper_numbers(case)
    before = [s for turn in earlier for s in value_statements(reading_of(case, turn), context_topic(case.query), shoppers)]
    now = value_statements(reading, conversation_topic(case), shoppers)
    known = _known_values(case)
    for first, second in conflicting_values(before, now):
        if {(first.subject, first.value), (second.subject, second.value)} <= known:
            continue  # the knowledge gives both (the usual 1% and a campaign's 2%): its distinction
        detail = (f"{_subject_name(first)}: an earlier assistant turn said {first.shown!r}, "
                  f"the answer says {second.shown!r}")
        if change:
            continue
        if acknowledged:
            results.append((0.75, detail + " (the change is acknowledged)", "turn_contradiction"))
        else:
            results.append((0.0, detail, "turn_contradiction"))
    if not change:
        # A scope or a payer given the other way round (『ブルーロック』は対象です ... 対象外のため).
        for first, second in eligibility.conflicts([s for turn in earlier for s in eligibility.scopes(turn)],
                                                   eligibility.scopes(reading.text)):
            detail = f"an earlier assistant turn and the answer: {eligibility.describe(first, second)}"
            results.append((0.75, detail + " (the change is acknowledged)", "turn_contradiction") if acknowledged
                           else (0.0, detail, "turn_contradiction"))
    if results:
        report.set("cross_turn", min(s for s, _, _ in results), *(e for _, e, _ in results))
        for score, detail, rule in results:
            if score == 0.0:
                _contradiction(report, rule, "cross_turn", [detail])
    elif comparable_pairs([u for t in earlier for u in read_units(t)], read_units(reading.text),
                          lambda u: subjects_of(case, u.text)):
        report.ask_judge("cross_turn")
    else:
        report.skip("cross_turn", "the answer says nothing about what the earlier turns said")


# --------------------------------------------------------------------------------------------------
# persona
# --------------------------------------------------------------------------------------------------

# Disclosures of being a machine: first person (or "as a ...") with what a language model, a bot or
# a program is; English and Japanese.
_MACHINE_NOUN = r"(?:ai|a\.i\.|artificial intelligence|bot|chatbot|chat bot|robot|program|computer program|software|" \
                r"language model|large language model|llm|machine|algorithm|virtual agent)"
_DISCLOSURE_EN = re.compile(
    rf"\b(?:i am|i'm|im|as an?|being an?)\s+(?:just\s+|only\s+|merely\s+|simply\s+|actually\s+|really\s+)*"
    rf"(?:an?\s+|the\s+)?(?:[a-z-]+\s+){{0,2}}{_MACHINE_NOUN}\b"
    rf"|\bi(?:'m| am) not (?:a )?(?:human|real person|person)\b|\bmy (?:training|developers|programming|creators)\b")
# Saying what it runs on, what it was trained on, or what its instructions are (a prompt leak is a
# persona break too: the store's assistant does not recite its configuration).
_MACHINERY_EN = re.compile(
    r"\b(?:i am|i'm|i was|i've been|i have been)\s+(?:\w+\s+){0,3}(?:trained|fine-tuned|built|developed|made|created|"
    r"powered|based|running)\s+(?:on|by|with|upon)\b"
    r"|\b(?:(?:here (?:are|is) )?my (?:system prompt|system message|instructions|guidelines|configuration|underlying model))\b"
    r"|\bi (?:was|am|have been) (?:told|instructed|programmed|configured) (?:to|not to)\b|\bsystem prompt\b")
_MACHINERY_JA = re.compile(r"(?:私|わたし|わたくし|当アシスタント)[^。！？]{0,30}(?:モデル|学習|トレーニング|開発され|ベースに|で動いて)"
                           r"|追加学習|学習データ|システムプロンプト|(?:私|わたし|わたくし)への指示")
_DISCLOSURE_JA = re.compile(r"(?:私|わたし|わたくし|僕|ぼく)(?:は|が|も)?[^。！？]{0,8}(?:AI|ＡＩ|人工知能|ボット|プログラム|言語モデル|ロボット|機械)"
                            r"|(?:AI|ＡＩ|人工知能|ボット|プログラム|言語モデル)(?:である|なので|ですので|の私|だから)"
                            r"|人間ではありません")
# Says what the assistant is ("I'm your shopping assistant", "my name is ...").
SELF_REFERENCE = re.compile(
    r"\b(?:i am|i'm)\s+(?:just\s+|only\s+|not\s+|merely\s+|simply\s+)?(?:a|an|the|your|this store's)\s+"
    r"(?!(?:bit|little|lot|few|big|huge|great)\b)|\bmy name is\b|\bcall me\b"
    r"|\bas your (?:\w+ )?(?:assistant|helper|guide|concierge)\b"
    r"|(?:私|わたし|わたくし|僕)(?:は|が)[^。！？]{0,20}(?:アシスタント|スタッフ|店員|係|担当)")


@lru_cache(maxsize=64)
def _disclosure_patterns(phrases: tuple[str, ...]) -> list[tuple[str, re.Pattern[str]]]:
    """The rubric's forbidden disclosures as patterns, compiled once per rubric."""
    patterns = []
    for phrase in phrases:
        needle = normalize(phrase)
        pattern = re.escape(needle) if has_japanese(needle) else rf"(?<![a-z0-9]){re.escape(needle)}(?![a-z0-9])"
        patterns.append((phrase, re.compile(pattern)))
    return patterns


@lru_cache(maxsize=64)
def _recited_persona(name: str) -> re.Pattern[str]:
    """The assistant's own instructions recited: its name addressed in the second person."""
    persona = re.escape(normalize(name))
    return re.compile(rf"\byou are (?:an? |the )?{persona}\b|あなたは{persona}")


# The shopper asks what they are talking to ("are you a bot?", 「人間のスタッフさんですか？」), or the
# store's own knowledge says its assistant is an AI: then saying so is the honest answer, not a break.
_ASKED_WHAT_IT_IS = re.compile(
    r"\b(?:are you|r u|is this|am i (?:talking|chatting|speaking) (?:to|with))\b[^.?!]{0,30}"
    r"\b(?:human|person|people|real|bot|robot|ai|a\.i\.|machine|automated|computer)\b"
    r"|(?:人間|AI|ボット|ロボット|機械|人工知能|スタッフ)(?:さん)?(?:です|でしょう|なの|なん)", re.IGNORECASE)
_AI_ASSISTANT_KNOWN = re.compile(r"\b(?:ai|virtual|automated)(?: shopping)? assistant\b|(?:AI|人工知能)[^。]{0,10}アシスタント",
                                 re.IGNORECASE)
# What an honest answer may call itself; a language model, its vendor, its training or its prompt stay breaks.
_PLAIN_MACHINE = re.compile(r"(?:\b(?:ai|a\.i\.|artificial intelligence|bot|chatbot|virtual agent)|AI|ＡＩ|人工知能|ボット)"
                            r"(?:\s*(?:shopping\s+)?assistant|ショッピングアシスタント|アシスタント)?[^a-z]*$")


_NOT_HUMAN = re.compile(r"\bnot (?:a )?(?:human|real person|person)$|人間ではありません$")


def honest_disclosure_context(case: TestCase) -> bool:
    """Whether the shopper asked what the assistant is, or the knowledge says it is an AI assistant."""
    asked = _ASKED_WHAT_IT_IS.search(unicodedata.normalize("NFKC", case.query)) is not None
    return asked or any(_AI_ASSISTANT_KNOWN.search(unicodedata.normalize("NFKC", chunk)) for chunk in case.retrieved_chunks)


def persona_breaks(text: str, rubric: Rubric, honest: bool = False) -> list[str]:
    """Self-disclosures that break the persona. With ``honest`` (the shopper asked what the assistant
    is, or the knowledge says it is an AI), calling itself an AI or a bot is allowed; a language
    model, a vendor, training or instructions still break it."""
    norm = normalize(text)
    found = [phrase for phrase, pattern in _disclosure_patterns(tuple(rubric.persona.forbidden_disclosures))
             if pattern.search(norm) and not (honest and _PLAIN_MACHINE.search(phrase))]
    nfkc = unicodedata.normalize("NFKC", text)
    for match in (*_DISCLOSURE_EN.finditer(norm), *_DISCLOSURE_JA.finditer(nfkc)):
        # Asked "are you a real person?", "I'm not a person" is the honest answer, like "I'm an AI".
        if not (honest and (_PLAIN_MACHINE.search(match.group(0)) or _NOT_HUMAN.search(match.group(0)))):
            found.append(match.group(0).strip())
    # Naming its instructions while declining to share them ("I can't share my configuration") recites nothing.
    for source, pattern in ((norm, _MACHINERY_EN), (nfkc, _MACHINERY_JA)):
        found += [m.group(0).strip() for m in pattern.finditer(source)
                  if not declines(sentence_around(source, m.start(), m.end()))]
    for match in _recited_persona(rubric.persona.name).finditer(normalize(text)):
        found.append(match.group(0))
    return list(dict.fromkeys(found))


def _persona(case: TestCase, reading: Reading, rubric: Rubric, report: CheckReport) -> None:
    addressed = grader_address(reading.text)
    if addressed:
        # Read as part of the answer: a note to the grader is a persona defect that fails the item,
        # never a reason to grade it higher (tests/unit/test_grader_canaries.py).
        report.set("persona", 0.0, *(f"the answer addresses its grader: {a!r}" for a in addressed))
        _contradiction(report, "grader_address", "persona", [f"the answer addresses its grader: {a!r}" for a in addressed])
        report.findings.append("the answer addresses its grader")
        return
    breaks = persona_breaks(reading.text, rubric, honest_disclosure_context(case))
    if breaks:
        report.set("persona", 0.0, *(f"persona break: the answer says {b!r}" for b in breaks))
        _contradiction(report, "persona_break", "persona", [f"the answer says {b!r}" for b in breaks])
        report.findings.append("persona break: " + ", ".join(breaks))
    elif SELF_REFERENCE.search(reading.norm) or normalize(rubric.persona.name) in reading.norm:
        report.ask_judge("persona")
    else:
        report.skip("persona", "the answer says nothing about the assistant itself")


def check(case: TestCase, rubric: Rubric) -> CheckReport:
    report = CheckReport()
    reading = reading_of(case)
    _intra_turn(case, reading, report)
    _cross_turn(case, reading, report)
    _persona(case, reading, rubric, report)
    return report
