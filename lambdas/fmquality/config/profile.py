"""Rubric profiles: which dimensions a rubric grades, with which sub-scores, weights, levels and
letter grades, and which sub-scores the deterministic checks may settle (issue 11, DESIGN section 5).

A profile is data (``datasets/profiles/<name>.yaml``, linked under ``fmquality/config/data/profiles/``)
and the one home of a dimension's name, sub-scores, weights and levels: the state machine maps over
``profile.dimension_names``, the composite reads ``profile.weights_for(category)``, the judge prompt
reads the levels. The profile names its scoring scheme (``scheme:``), the code that checks its
dimensions (``fmquality.schemes``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fmquality.config.yamldoc import parse_model, yaml_mapping
from fmquality.domain.errors import ProfileError

PACKAGE_PROFILES = Path(__file__).resolve().parent / "data" / "profiles"
REPO_PROFILES = Path(__file__).resolve().parents[3] / "datasets" / "profiles"
# The packaged copy first: inside a Lambda there is no datasets/ folder.
PROFILE_DIRS = (PACKAGE_PROFILES, REPO_PROFILES)

_TOL = 1e-6

Condition = Literal["tool_calls_present", "citations_present", "sources_present", "always"]


class Level(BaseModel):
    """One described grading level; the judge is given the name, value and description."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    value: float = Field(ge=0.0, le=1.0)
    description: str = Field(min_length=1)


class DimensionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    # Either one weight for every category or a weight per category (MangaAssist: per intent).
    weight: float | None = Field(default=None, ge=0.0, le=1.0)
    weights: dict[str, float] | None = None
    sub_scores: dict[str, float] = Field(min_length=1)
    levels: list[Level] | None = None
    # Or five described levels per sub-score, level 5 (best) first, for a dimension graded on the
    # numbered levels 5..1 (MangaAssist): the judge is given each sub-score's own descriptions.
    sub_score_levels: dict[str, list[str]] | None = None
    check_settled: list[str] = Field(default_factory=list)
    applies_when: Condition = "always"
    # A binary, final dimension (MangaAssist's safety): its score at or above this is safe, below it
    # unsafe, and an unsafe item fails whatever its composite (its reason listed first).
    final_override: float | None = Field(default=None, gt=0.0, le=1.0)

    @model_validator(mode="after")
    def _consistent(self) -> "DimensionSpec":
        if (self.weight is None) == (self.weights is None):
            raise ValueError(f"{self.name}: give exactly one of weight (all categories) or weights (per category)")
        total = sum(self.sub_scores.values())
        if any(w < 0 for w in self.sub_scores.values()) or not math.isclose(total, 1.0, abs_tol=_TOL):
            raise ValueError(f"{self.name}: sub_scores weights must be >= 0 and sum to 1, they sum to {total:.4f}")
        unknown = sorted(set(self.check_settled) - set(self.sub_scores))
        if unknown:
            raise ValueError(f"{self.name}: check_settled names unknown sub-scores {unknown}")
        if self.levels is not None:
            names = [lv.name for lv in self.levels]
            if len(set(names)) != len(names):
                raise ValueError(f"{self.name}: level names must be unique")
            values = [lv.value for lv in self.levels]
            if values != sorted(values, reverse=True) or len(set(values)) != len(values):
                raise ValueError(f"{self.name}: levels must be listed best first with strictly decreasing values")
        if self.sub_score_levels is not None:
            if self.levels is not None or set(self.sub_score_levels) != set(self.sub_scores):
                raise ValueError(f"{self.name}: sub_score_levels describe every sub-score, and replace levels")
            if any(len(texts) != 5 or not all(t.strip() for t in texts) for texts in self.sub_score_levels.values()):
                raise ValueError(f"{self.name}: sub_score_levels give five non-empty descriptions per sub-score")
        return self

    def weight_for(self, category: str) -> float:
        if self.weights is not None:
            return self.weights[category]
        assert self.weight is not None
        return self.weight

    def level(self, name: str) -> Level:
        for lv in self.levels or []:
            if lv.name == name:
                return lv
        raise KeyError(f"{self.name}: no level {name!r}")


class GradeBand(BaseModel):
    model_config = ConfigDict(extra="forbid")

    grade: str = Field(min_length=1)
    min: float = Field(ge=0.0, le=100.0)  # inclusive lower bound on the 0-100 total


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""
    categories: list[str] = Field(min_length=1)
    dimensions: list[DimensionSpec] = Field(min_length=1)
    # The only composite today: weighted mean over the dimensions that apply, weights renormalised.
    composite: Literal["weighted_mean_applicable"] = "weighted_mean_applicable"
    grades: list[GradeBand] | None = None
    # The scoring scheme: the code behind the dimensions (``fmquality.schemes.SCHEMES``, by name).
    # A name, not a module path: data does not name code locations, and the registry is the closed,
    # listed set of schemes (an unknown name is refused with the known ones).
    scheme: str = Field(pattern=r"^[a-z][a-z0-9-]*$")

    @field_validator("categories")
    @classmethod
    def _unique_categories(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("categories must be unique")
        return value

    @model_validator(mode="after")
    def _weights_cover_categories(self) -> "Profile":
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError("dimension names must be unique")
        for dim in self.dimensions:
            if dim.weights is not None and set(dim.weights) != set(self.categories):
                raise ValueError(f"{dim.name}: weights must name exactly the categories {self.categories}")
        for category in self.categories:
            total = sum(d.weight_for(category) for d in self.dimensions)
            if not math.isclose(total, 1.0, abs_tol=_TOL):
                raise ValueError(f"dimension weights for {category!r} must sum to 1, they sum to {total:.4f}")
        if self.grades is not None:
            bounds = [g.min for g in self.grades]
            if bounds != sorted(bounds, reverse=True) or len(set(bounds)) != len(bounds):
                raise ValueError("grades must be listed best first with strictly decreasing min")
            if bounds[-1] != 0:
                raise ValueError("the last grade must start at 0 so every total has a grade")
        return self

    @property
    def dimension_names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    def dimension(self, name: str) -> DimensionSpec:
        for dim in self.dimensions:
            if dim.name == name:
                return dim
        raise KeyError(f"profile {self.name}: no dimension {name!r}")

    def weights_for(self, category: str) -> dict[str, float]:
        if category not in self.categories:
            raise KeyError(f"profile {self.name}: unknown category {category!r} (allowed: {self.categories})")
        return {d.name: d.weight_for(category) for d in self.dimensions}

    def sub_score_table(self) -> dict[str, tuple[str, ...]]:
        """Each dimension's sub-score names, in order."""
        return {d.name: tuple(d.sub_scores) for d in self.dimensions}

    def grade_for(self, total: float) -> str | None:
        """The letter grade of a 0-100 total (bands are inclusive lower bounds), None without grades."""
        if self.grades is None:
            return None
        for band in self.grades:
            if total >= band.min:
                return band.grade
        return self.grades[-1].grade


def parse_profile(text: str, source: str = "<profile>") -> Profile:
    return parse_model(Profile, yaml_mapping(text, source, ProfileError, "a profile"), source, ProfileError, "profile")


def profile_path(name: str) -> Path:
    for folder in PROFILE_DIRS:
        candidate = folder / f"{name}.yaml"
        if candidate.is_file():
            return candidate
    raise ProfileError(f"no profile named {name!r} (looked in {', '.join(str(d) for d in PROFILE_DIRS)})")


def load_profile(name_or_path: str | Path) -> Profile:
    """A profile by name (``research-agent``) or by file path."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = profile_path(str(name_or_path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror or exc}") from exc
    profile = parse_profile(text, str(path))
    if path.stem != profile.name:
        raise ProfileError(f"{path}: the file name must be the profile's name ({profile.name!r})")
    return profile


def available_profiles() -> list[str]:
    names = {p.stem for folder in PROFILE_DIRS if folder.is_dir() for p in folder.glob("*.yaml")}
    return sorted(names)
