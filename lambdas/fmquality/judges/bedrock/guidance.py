"""The Bedrock judge's prose, read from data files at import and validated with pydantic.

- ``data/guidance.yaml`` (``GUIDANCE``): the sections of the MangaAssist scoring guide (role, scale,
  length, data rule, hints, situations that need care, procedure, output, store conventions), the
  sections of the profile prompts, and the framing of the case data. A text with ``{placeholders}``
  must name exactly the ones ``prompts.py`` fills in.
- ``data/casebook.yaml`` (``CASEBOOK``): the worked calibration examples, typed: each names the
  levels it grades, checked against the sub-scores of the profile it calibrates, and against its own
  text (each grade is stated in it, and the text grades nothing the grades leave out).

The level descriptions of the MangaAssist sub-scores are not here: they live in the profile
(``datasets/profiles/mangaassist.yaml``, ``sub_score_levels``).
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Annotated, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from fmquality.config.profile import load_profile
from fmquality.config.rubric import StyleRules
from fmquality.config.yamldoc import parse_model, yaml_mapping
from fmquality.domain.case import CatalogItem
from fmquality.judges.bedrock.schema import LEVELS

DATA = Path(__file__).resolve().parent / "data"
GUIDANCE_FILE = DATA / "guidance.yaml"
CASEBOOK_FILE = DATA / "casebook.yaml"

MARKER_FIELDS = ("case_begin", "case_end", "response_begin", "response_end")


def _template(*fields: str) -> object:
    """A non-empty text whose ``{placeholders}`` are exactly ``fields`` (none: plain prose)."""

    def check(text: str) -> str:
        named = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
        if named != set(fields):
            raise ValueError(f"placeholders {sorted(named)}, expected {sorted(fields)}")
        return text

    return Annotated[str, Field(min_length=1), AfterValidator(check)]


# Plain prose (no placeholders), and the texts prompts.py fills in.
Prose = _template()
MarkedText = _template(*MARKER_FIELDS)


class _Data(BaseModel):
    """A shipped data file's part: unknown keys are refused, nothing changes it after loading."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Data):
    """What the role says one call grades."""

    single: Prose
    combined: Prose


class StoreGuidance(_Data):
    """The MangaAssist scoring guide, in the order ``prompts.system_text`` sends it."""

    role: _template("scope")
    scope: Scope
    scale: Prose
    length: Prose
    data_rule: MarkedText
    hints: Prose
    edge_cases: Prose
    procedure: Prose
    output: Prose
    combined_output: Prose
    conventions: _template("version", "assistant", "registers", "lengths", "title_format", "title_scope",
                           "card_fields", "card_scope", "disclosures")
    title_formats: dict[str, Prose]

    @field_validator("title_formats")
    @classmethod
    def _every_title_format(cls, value: dict[str, str]) -> dict[str, str]:
        allowed = set(get_args(StyleRules.model_fields["japanese_title_format"].annotation))
        if set(value) != allowed:
            raise ValueError(f"must describe exactly the rubric's title formats {sorted(allowed)}")
        return value


class ProfileGuidance(_Data):
    """The prompt of a profile dimension (research-agent, tool-use)."""

    role: _template("profile", "description")
    data_rule: MarkedText
    output: Prose
    # What the numbered levels 5..1 mean for a dimension whose profile describes no levels.
    generic_levels: list[Prose] = Field(min_length=len(LEVELS), max_length=len(LEVELS))


class Guidance(_Data):
    store: StoreGuidance
    profile: ProfileGuidance
    frame: Prose
    close: _template("tool_name")


# -- the casebook -----------------------------------------------------------------------------------

# A snake_case word of the text (a sub-score, a dimension, an intent, a stock status).
_IDENTIFIER = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")
_STOCK_STATUSES = set(get_args(CatalogItem.model_fields["availability"].annotation))


_ANY_LEVEL = "|".join(str(level) for level in LEVELS)


def _stated(name: str, level: int | str = _ANY_LEVEL) -> re.Pattern[str]:
    """``name`` and then a level in the same clause: "tone 5", "price_accuracy and tone 5"."""
    return re.compile(rf"\b({name})\b[^.;:]*?\b({level})\b")


class CalibrationExample(_Data):
    """One worked example: sent as "Example <n> (<heading>). <text>"."""

    heading: str = Field(min_length=1, pattern=r"^[^\n()]+$")
    # Per answer the example grades: sub-score -> level.
    grades: list[dict[str, int]] = Field(min_length=1)
    text: Prose

    def graded(self) -> set[tuple[str, int]]:
        return {(name, level) for answer in self.grades for name, level in answer.items()}


class Casebook(_Data):
    """The worked examples of the profile ``profile``; every grade is checked against its sub-scores."""

    profile: str
    intro: Prose
    examples: list[CalibrationExample] = Field(min_length=1)

    @model_validator(mode="after")
    def _grades_fit_the_profile_and_the_text(self) -> "Casebook":
        spec = load_profile(self.profile)
        sub_scores = {name for names in spec.sub_score_table().values() for name in names}
        words = sub_scores | set(spec.dimension_names) | set(spec.categories) | _STOCK_STATUSES
        for number, example in enumerate(self.examples, start=1):
            problems = _example_problems(example, sub_scores, words)
            if problems:
                raise ValueError(f"example {number} ({example.heading}): {'; '.join(problems)}")
        return self

    def text(self) -> str:
        """The casebook as the system text ends with it."""
        examples = (f"Example {n} ({e.heading}). {e.text}" for n, e in enumerate(self.examples, start=1))
        return "\n\n".join([self.intro, *examples])


def _example_problems(example: CalibrationExample, sub_scores: set[str], words: set[str]) -> list[str]:
    problems = []
    for name, level in sorted(example.graded()):
        if name not in sub_scores:
            problems.append(f"grades an unknown sub-score {name!r}")
        elif level not in LEVELS:
            problems.append(f"grades {name} {level}, not a level (1 to 5)")
        elif not _stated(re.escape(name), level).search(example.text):
            problems.append(f"grades {name} {level}, but the text does not say so")
    known = "|".join(re.escape(name) for name in sorted(sub_scores))
    for name, level in _stated(known).findall(example.text):
        if (name, int(level)) not in example.graded():
            problems.append(f"the text grades {name} {level}, the grades do not")
    unknown = sorted(set(_IDENTIFIER.findall(example.text)) - words)
    if unknown:
        problems.append(f"the text names unknown sub-scores {unknown}")
    return problems


def load_guidance(path: Path = GUIDANCE_FILE) -> Guidance:
    return parse_model(Guidance, _mapping(path), str(path), ValueError, "judge guidance")


def load_casebook(path: Path = CASEBOOK_FILE) -> Casebook:
    return parse_model(Casebook, _mapping(path), str(path), ValueError, "casebook")


def _mapping(path: Path) -> dict:
    return yaml_mapping(path.read_text(encoding="utf-8"), str(path), ValueError, "a judge data file")


GUIDANCE = load_guidance()
CASEBOOK = load_casebook()

