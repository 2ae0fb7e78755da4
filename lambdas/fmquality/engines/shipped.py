"""Where the files the package ships live: in a repository checkout, beside the package
(``statemachines/``, ``lambdas/handlers/``, ``datasets/``); in an installed package, their copies under
``fmquality/bundled/`` (setup.py maps them there). Every reader of these files asks here, so the local
engine, ``run --example`` and rubric names work the same from a checkout and from ``pip install``.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]
BUNDLED_DIR = PACKAGE_DIR / "bundled"
_CHECKOUT_ROOT = PACKAGE_DIR.parents[1]


def _in_checkout() -> bool:
    """True when the package runs from the repository (lambdas/fmquality with statemachines/ two up)."""
    return ((_CHECKOUT_ROOT / "statemachines" / "evaluation.functions.json").is_file()
            and (PACKAGE_DIR.parent / "handlers").is_dir())


IN_CHECKOUT = _in_checkout()
# The folder that holds the ``handlers`` package (the local engine puts it on sys.path).
LAMBDAS_DIR = PACKAGE_DIR.parent if IN_CHECKOUT else BUNDLED_DIR / "lambda_code"
STATEMACHINES_DIR = _CHECKOUT_ROOT / "statemachines" if IN_CHECKOUT else BUNDLED_DIR / "statemachines"
DATASETS_DIR = _CHECKOUT_ROOT / "datasets" if IN_CHECKOUT else BUNDLED_DIR / "datasets"
RUBRICS_DIR = DATASETS_DIR / "rubrics"

# `fmquality run --example`: the shipped MangaAssist golden set (defective answers on purpose) and its catalog.
EXAMPLE_DATASET = DATASETS_DIR / "mangaassist" / "golden.jsonl"
EXAMPLE_CATALOG = DATASETS_DIR / "mangaassist" / "catalog.json"


def shipped_rubrics() -> list[str]:
    """The names of the shipped rubrics (``--rubric NAME`` resolves them)."""
    return sorted(p.stem for p in RUBRICS_DIR.glob("*.yaml"))


def resolve_rubric(value: str | None) -> str | None:
    """A rubric option as given: an existing file stays a file; else a shipped rubric's name
    (``tool-use-v1`` or ``tool-use-v1.yaml``) becomes its path; else the value is returned unchanged
    (the loader then names the missing file)."""
    if value is None or Path(value).exists():
        return value
    candidate = RUBRICS_DIR / Path(value).name
    for path in (candidate, candidate.with_name(candidate.name + ".yaml")):
        if path.suffix == ".yaml" and path.is_file():
            return str(path)
    return value
