"""run.layout: the one reader and writer of a run's files, over any storage (here an --out folder)."""

from __future__ import annotations

from fmquality.engines.outputs import FolderStorage
from fmquality.run import layout
from fmquality.targets.base import TargetSpec


def test_targets_json_round_trips_with_where_each_spec_came_from(tmp_path):
    storage = FolderStorage(tmp_path)
    written = layout.RunTargets(
        specs={"candidate": TargetSpec.parse("lambda:chatbot"), "control": None},
        resolved_from={"candidate": "ssm:/mangaassist/production-target", "control": None})
    layout.write_targets(storage, layout.run_key("r1", layout.TARGETS), written)
    assert (tmp_path / "runs" / "r1" / "targets.json").is_file()
    assert layout.read_targets(storage, layout.run_key("r1", layout.TARGETS)) == written


def test_the_report_is_put_in_place_last(tmp_path):
    order = []

    class Recording(FolderStorage):
        def write_bytes(self, key, body, content_type):
            order.append((key, content_type))
            return super().write_bytes(key, body, content_type)

    layout.write_outputs(Recording(tmp_path), "", {layout.REPORT_JSON: "{}", layout.RESULTS: "",
                                                   layout.REPORT_HTML: "<html>", layout.CONTROL_RESULTS: None,
                                                   layout.JUNIT: None, layout.SUMMARY_MD: None})
    assert order == [("results.jsonl", "application/x-ndjson"), ("report.html", "text/html; charset=utf-8"),
                     ("report.json", "application/json")]
    assert not (tmp_path / "control_results.jsonl").exists()
    assert layout.read_outputs(FolderStorage(tmp_path), "")[layout.REPORT_HTML] == "<html>"
