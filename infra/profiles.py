"""The rubric profiles' shape as infrastructure needs it: categories and dimension names.

Read from datasets/profiles/<name>.yaml with PyYAML: infra/ never imports lambdas/ (DESIGN section 2),
and the profile file is data. The core (fmquality.config.profile) validates the same files fully; the
infrastructure tests check the two read the same lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROFILES_DIR = Path(__file__).resolve().parent.parent / "datasets" / "profiles"
DEFAULT_PROFILE = "mangaassist"


@dataclass(frozen=True)
class ProfileShape:
    name: str
    categories: tuple[str, ...]
    dimensions: tuple[str, ...]


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
    )
