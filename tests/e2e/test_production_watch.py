"""A scaled-down production week end to end: generated turns -> redacted capture in the partitioned
layout -> daily stratified samples -> offline-judge runs (direct engine) -> drift against a healthy
reference week -> review round trip. The full week (20,160 turns) is datasets/production/simulate_week.py."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _simulate_module():
    spec = importlib.util.spec_from_file_location("simulate_week", ROOT / "datasets/production/simulate_week.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaled_down_week(tmp_path):
    sim = _simulate_module()
    from fmquality.config.watch import WatchConfig

    config = WatchConfig.model_validate({"sampling": {"min_per_stratum": 12}})
    figures = sim.simulate(turns=2800, workdir=tmp_path, config=config, log=lambda m: None)
    assert figures["pii_in_storage"] == 0 and figures["planted_pii"] > 100
    assert figures["days_after_slide_start_to_flag"] is not None and figures["days_after_slide_start_to_flag"] <= 2
    assert figures["review"]["kappa_before"] is None and figures["review"]["kappa_after"] is not None
    assert figures["review"]["reviewed"] == figures["review"]["queue"]
    assert set(figures["sample_size_per_stratum"]) == {f"{i}|{loc}" for i in (
        "recommendation", "product_question", "faq", "order_tracking", "return_request", "promotion",
        "checkout_help", "chitchat") for loc in ("en-US", "ja-JP")}
    # The captured layout is the stream's: production/turns/dt=YYYY-MM-DD/.
    days = sorted(p.name for p in (tmp_path / "bucket/production/turns").iterdir())
    assert days[0] == "dt=2026-11-09" and days[-1] == "dt=2026-11-22" and len(days) == 14

    # The CLI over the same files: sample, drift, review export/import.
    cli = [sys.executable, "-m", "fmquality.cli.main"]
    env = {"PYTHONPATH": f"{ROOT / 'lambdas'}:{ROOT}", "PATH": "/usr/bin:/bin"}
    out = tmp_path / "sample.jsonl"
    done = subprocess.run(cli + ["sample", "--turns", str(tmp_path / "bucket/production/turns"), "--from", "2026-11-16",
                                 "--to", "2026-11-22", "--out", str(out), "--min-per-stratum", "5", "--seed", "1"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) >= 28  # >= 1 % of 2,800
    runs = tmp_path / "runs"
    drift = subprocess.run(cli + ["drift", "--runs", *sorted(str(p) for p in runs.glob("prod-*")),
                                  "--reference", *sorted(str(p) for p in runs.glob("ref-*"))],
                           capture_output=True, text=True, env=env)
    assert drift.returncode == 1 and "product_question   ja-JP" in drift.stdout and "DRIFT" in drift.stdout
    run_dir = sorted(runs.glob("prod-*"))[0]
    export = tmp_path / "review.csv"
    done = subprocess.run(cli + ["review", "export", "--run-dir", str(run_dir), "--format", "csv", "--out", str(export)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    lines = export.read_text().splitlines()
    header = lines[0].split(",")
    bad = tmp_path / "bad.csv"
    bad.write_text(lines[0] + "\n" + ",".join("maybe" if h == "acceptable" else ("x" if h == "test_id" else "")
                                              for h in header) + "\n")
    done = subprocess.run(cli + ["review", "import", str(bad), "--run-dir", str(run_dir)], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and f"{bad}:2: acceptable" in done.stderr
