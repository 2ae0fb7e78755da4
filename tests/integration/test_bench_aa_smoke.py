"""`python -m bench aa` end to end on a small subset with 2 repetitions: the A/A benchmark must not rot.
Its false-positive rate means something only over the full set and many repetitions (`make bench`), so
only what holds at any scale is checked: both arms paired, reworded, and the figures recorded."""

from __future__ import annotations

import json
import random

from bench.__main__ import main
from bench.aa import reword


def test_bench_aa_runs_and_writes_its_figures(tmp_path):
    out = tmp_path / "results.json"
    code = main(["aa", "--limit", "12", "--aa-repetitions", "2", "--out", str(out)])
    aa = json.loads(out.read_text(encoding="utf-8"))["aa"]
    assert aa["n"] == 2 and len(aa["runs"]) == 2 and aa["workload"]["cases"] == 12
    for run in aa["runs"]:
        assert run["pairs"] == 12 and run["unpaired"] == 0 and run["overall_ci"] is not None
        assert run["overall_ci"][0] <= run["overall_difference"] <= run["overall_ci"][1]
    assert 0 <= aa["paired_rule_failures"] <= aa["gate_failures_any_reason"] <= 2
    assert aa["answers_reworded"] > 0
    assert not aa["targets"]["repetitions >= 20"] and code == 1  # 2 repetitions cannot meet the target


def test_rewording_keeps_cards_names_and_numbers_and_is_seeded():
    answer = ("Sure! You're going to love these:\n- Great Teacher Onizuka — $12.99 — in stock\n"
              "It's $12.99 right now. Junji Ito's Uzumaki is really great. Shipping takes 3–5 days.")
    variants = {reword(answer, random.Random(seed)) for seed in range(40)}
    assert len(variants) > 5
    for variant in variants:
        assert "\n- Great Teacher Onizuka — $12.99 — in stock\n" in variant
        assert "$12.99" in variant.split("\n")[2] and "Junji Ito's Uzumaki" in variant and "3–5 days" in variant
    assert reword(answer, random.Random(3)) == reword(answer, random.Random(3))
    assert reword(None, random.Random(1)) is None and reword("", random.Random(1)) == ""
