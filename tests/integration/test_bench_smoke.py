"""`python -m bench` end to end on a tiny, fast workload: the benchmark itself must not rot. Its
figures are only meaningful with the default latency and quota (`make bench`), so none is checked
here beyond the invariants that hold at any scale."""

from __future__ import annotations

import json

from bench.__main__ import main


def test_bench_runs_all_modes_and_writes_results(tmp_path, capsys):
    out = tmp_path / "results.json"
    main(["judge", "--limit", "4", "--naive-cases", "1", "--latency-ms", "0", "--rps", "1000",
          "--concurrency", "2", "--out", str(out)])
    results = json.loads(out.read_text(encoding="utf-8"))
    modes = results["modes"]
    assert set(modes) == {"per_dimension", "per_dimension_cache_rerun", "combined", "naive"}
    for name in ("per_dimension", "combined", "naive"):
        for key in ("cases", "wall_s", "judge_calls", "calls_per_case", "throttled", "unscored", "quota_bound_s"):
            assert key in modes[name], (name, key)
    a = modes["per_dimension"]
    assert a["cases"] == 4 and a["lost"] == 0 and a["double_counted"] == 0 and a["unscored"] == 0
    from fmquality.schemes.mangaassist import DIMENSIONS

    assert 0 < a["calls_per_case"] <= len(DIMENSIONS)  # at most one call per dimension
    assert modes["combined"]["calls_per_case"] <= 1
    assert results["cache_rerun_calls"] == 0 and modes["per_dimension_cache_rerun"]["cached_verdicts"] == a["judge_calls"]
    from fmquality.schemes.mangaassist import SUB_SCORES

    assert modes["naive"]["calls_per_case"] == sum(len(s) for s in SUB_SCORES.values()) and modes["naive"]["extrapolated"]
    assert (modes["naive"]["scored"], modes["naive"]["unscored"]) == (1, 0)  # the baseline did the work
    assert {"utilization", "speedup_vs_naive", "targets"} <= set(results)
