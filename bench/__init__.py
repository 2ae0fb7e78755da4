"""Benchmark and test tooling: a local Bedrock runtime stand-in and the ``make bench`` workloads (judge
throughput, catalog scale)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# `python -m bench` and the catalog scenario's subprocesses run without the Makefile's PYTHONPATH.
if str(ROOT / "lambdas") not in sys.path:
    sys.path.insert(0, str(ROOT / "lambdas"))


def shown(path: str) -> str:
    """A path as results.json records it: relative to the repository when inside it."""
    return str(Path(path).relative_to(ROOT)) if Path(path).is_relative_to(ROOT) else path


def warm_up(case, rubric) -> None:
    """The first case's checks load lazy resources (romanization and segmentation tables, ~0.3 s):
    done once before any timing, as in any long-lived process."""
    from fmquality.scoring.plan import plan_dimension
    from fmquality.schemes.mangaassist import DIMENSIONS, MANGAASSIST

    for dimension in DIMENSIONS:
        plan_dimension(MANGAASSIST, dimension, case, rubric)
