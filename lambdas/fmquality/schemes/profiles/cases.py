"""Loading a dataset of another profile before ``TestCase`` knows profiles.

``TestCase.intent`` only takes the MangaAssist intents; a research-agent or tool-use case names its
profile's category there instead. ``ProfileCase`` is a ``TestCase`` whose intent is any string, checked
against the profile's ``categories`` by ``parse_profile_lines``, which also validates the profile
fields (``fields.parse_profile_fields``). Every problem is a ``LineError`` (file:line: field: reason).
Once TestCase validates intent against the rubric's profile, this module reduces to the field check.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, ValidationError

from fmquality.domain.errors import DatasetError, LineError
from fmquality.run.dataset import _field_path
from fmquality.domain.case import TestCase
from fmquality.schemes.profiles.fields import ProfileFields, fields_of
from fmquality.config.profile import Profile


class ProfileCase(TestCase):
    """A TestCase whose intent is a profile category (validated against the profile by the loader)."""

    __test__ = False
    intent: str = Field(min_length=1)  # type: ignore[assignment]


@dataclass
class ProfileDataset:
    source: str
    profile: str
    cases: list[ProfileCase] = field(default_factory=list)
    fields: dict[str, ProfileFields] = field(default_factory=dict)  # by test_id
    errors: list[LineError] = field(default_factory=list)
    line_of: dict[str, int] = field(default_factory=dict)


def parse_profile_lines(lines: list[bytes], source: str, profile: Profile) -> ProfileDataset:
    out = ProfileDataset(source=source, profile=profile.name)
    seen: dict[str, int] = {}
    for number, raw_bytes in enumerate(lines, start=1):
        raw = raw_bytes.decode("utf-8", "replace").lstrip("\ufeff").strip()
        if not raw:
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            out.errors.append(LineError(file=source, line=number, field="<line>", reason=f"not valid JSON: {exc.msg}"))
            continue
        if not isinstance(data, dict):
            out.errors.append(LineError(file=source, line=number, field="<line>", reason="each line must be a JSON object"))
            continue
        try:
            case = ProfileCase.model_validate(data)
        except ValidationError as exc:
            out.errors += [LineError(file=source, line=number, field=_field_path(e["loc"]), reason=e["msg"])
                           for e in exc.errors()]
            continue
        problems: list[LineError] = []
        if case.intent not in profile.categories:
            problems.append(LineError(file=source, line=number, field="intent",
                                      reason=f"{case.intent!r} is not a category of profile {profile.name} "
                                             f"(allowed: {', '.join(profile.categories)})"))
        fields = fields_of(case)
        if case.test_id in seen:
            problems.append(LineError(file=source, line=number, field="test_id",
                                      reason=f"duplicate test_id {case.test_id!r} (first on line {seen[case.test_id]})"))
        if problems or fields is None:
            out.errors += problems
            continue
        seen[case.test_id] = number
        out.cases.append(case)
        out.fields[case.test_id] = fields
        out.line_of[case.test_id] = number
    return out


def load_profile_dataset(path: str | Path, profile: Profile) -> ProfileDataset:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset: {exc.strerror or exc}") from exc
    return parse_profile_lines(data.splitlines(), str(path), profile)
