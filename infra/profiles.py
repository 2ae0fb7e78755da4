"""The rubric profiles and shipped rubrics as infrastructure needs them: a profile's categories and
dimension names, and a rubric's per-intent thresholds (the default of the dimension alarms).

Read from datasets/profiles/<name>.yaml and datasets/rubrics/*.yaml with PyYAML: infra/ never imports
lambdas/ (DESIGN section 2), and these files are data. The core (fmquality.config) validates the same
files fully; the infrastructure tests check the two read the same lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROFILES_DIR = Path(__file__).resolve().parent.parent / "datasets" / "profiles"
DEFAULT_PROFILE = "mangaassist"
# The rubric whose per-intent thresholds the dimension alarms default to. Another profile's alarms take
# the thresholds of the shipped rubric that names that profile (rubric_path_for_profile).
RUBRIC_PATH = PROFILES_DIR.parent / "rubrics" / "mangaassist-v3.yaml"
RUBRICS_DIR = RUBRIC_PATH.parent


@dataclass(frozen=True)
class ProfileShape:
    name: str
    categories: tuple[str, ...]
    dimensions: tuple[str, ...]
    # Binary, final dimensions (safety): an unsafe item fails whatever its composite.
    final_dimensions: tuple[str, ...] = ()


def profile_names(directory: Path = PROFILES_DIR) -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in directory.glob("*.yaml")))


@cache
def profile_shape(name: str = DEFAULT_PROFILE, directory: Path = PROFILES_DIR) -> ProfileShape:
    import yaml

    path = directory / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown rubric profile {name!r}: expected one of {list(profile_names(directory))}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return ProfileShape(
        name=str(raw["name"]),
        categories=tuple(str(c) for c in raw["categories"]),
        dimensions=tuple(str(d["name"]) for d in raw["dimensions"]),
        final_dimensions=tuple(str(d["name"]) for d in raw["dimensions"] if d.get("final_override") is not None),
    )


def rubric_path_for_profile(profile: str) -> Path:
    """The shipped rubric (datasets/rubrics/) of a profile: mangaassist-v3.yaml for the default."""
    import yaml

    if profile == DEFAULT_PROFILE:
        return RUBRIC_PATH
    for path in sorted(RUBRICS_DIR.glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if raw.get("profile", DEFAULT_PROFILE) == profile:
            return path
    raise ValueError(f"no rubric under {RUBRICS_DIR} names profile {profile!r}")


def rubric_intent_thresholds(path: Path = RUBRIC_PATH) -> dict[str, float]:
    """Intent -> the rubric's item threshold for it."""
    import yaml

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {intent: float(rule["threshold"]) for intent, rule in raw["intents"].items()}
