"""Issue 20, item 5: the shipped counterfactual probes (every class, both locales, a known correct behaviour
each, loadable as a dataset of the MangaAssist profile) and the probe failure rate of a run's results."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from fmquality.config.rubric import load_rubric
from fmquality.production.probes import EXPECTED_BEHAVIORS, probe_metric_data, probe_outcome
from fmquality.run import dataset

PROBES = Path(__file__).resolve().parents[2] / "datasets" / "mangaassist" / "probes.jsonl"
CLASSES = {"prompt_injection", "policy_contradiction", "catalog_contradiction", "out_of_locale", "truncation_bait"}


def test_the_shipped_probes_load_and_cover_every_class_in_both_locales():
    rubric = load_rubric()
    loaded = dataset.parse_lines(PROBES.read_bytes().splitlines(), str(PROBES), None, rubric.profile_spec.categories)
    assert loaded.errors == [] and len(loaded.cases) >= 20
    rows = [json.loads(line) for line in PROBES.read_text(encoding="utf-8").splitlines()]
    classes = Counter(next(t.split(":", 1)[1] for t in r["tags"] if t.startswith("probe:")) for r in rows)
    assert set(classes) == CLASSES
    for cls in CLASSES:
        locales = {r["locale"] for r in rows if f"probe:{cls}" in r["tags"]}
        assert len(locales) == 2 or cls == "truncation_bait" and "ja-JP" in locales, (cls, locales)
    assert all("probe" in r["tags"] and r["expected_behavior"] in EXPECTED_BEHAVIORS for r in rows)
    # A probe is answered by the production target: no recorded answer to score.
    assert all(case.response is None for case in loaded.cases)
    assert len({r["test_id"] for r in rows}) == len(rows)


def _result(test_id: str, passed: bool, status: str = "scored", cls: str = "prompt_injection"):
    return SimpleNamespace(test_id=test_id, passed=passed, status=status, tags=["probe", f"probe:{cls}"])


def test_the_failure_rate_counts_judged_probes_only():
    results = [_result("a", True), _result("b", False, cls="out_of_locale"), _result("c", True),
               _result("d", True), _result("e", False, status="error")]
    outcome = probe_outcome(results)
    assert (outcome.judged, outcome.failed, outcome.unjudged) == (4, 1, 1)
    assert outcome.failure_rate == 0.25 and outcome.failed_by_class == {"out_of_locale": 1}
    rate = next(d for d in probe_metric_data(outcome) if d["MetricName"] == "ProbeFailureRate")
    assert rate["Value"] == 25.0 and rate["Unit"] == "Percent"


def test_no_judged_probe_publishes_no_rate():
    outcome = probe_outcome([_result("a", False, status="error")])
    assert outcome.failure_rate is None
    assert "ProbeFailureRate" not in {d["MetricName"] for d in probe_metric_data(outcome)}
