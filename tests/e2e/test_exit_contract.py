"""One exit-code contract everywhere (issue 17): 0 the gate passed, 1 the gate failed, 2 bad input
naming file, line and field, 3 the run could not be done. A crash is never read as a failed gate, and
outputs are written whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fmquality.engines import direct
from fmquality.cli.common import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_PASSED, EXIT_RUN_FAILED
from fmquality.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def run(out: Path, dataset: Path, *extra: str) -> int:
    return main(["run", "--engine", "direct", "--dataset", str(dataset), "--out", str(out), "--quiet", *extra])


def test_passed_and_failed_gates(tmp_path):
    assert run(tmp_path / "a", FIXTURES / "cli_good.jsonl") == EXIT_PASSED
    assert run(tmp_path / "b", FIXTURES / "cli_regressed.jsonl") == EXIT_GATE_FAILED


@pytest.mark.parametrize(("line", "named"), [
    ('{"test_id":"a","intent":"faq","query":"q\\ud800","response":"r"}', "1: query: holds a lone surrogate"),
    ('{"test_id":"a","intent":"faq","query":"q","response":NaN}', "1: <line>: not valid JSON: NaN"),
    ('{"test_id":"a","intent":"faq","query":"q","response":"r","label":{"acceptable":"yes"}}', "1: label.acceptable"),
    ("[" * 200_000 + "]" * 200_000, "1: <line>: not valid JSON: nested too deeply"),
])
def test_bad_input_is_named_and_exits_2_without_writing_results(tmp_path, capsys, line, named):
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text(line + "\n", encoding="utf-8")
    assert run(tmp_path / "out", dataset) == EXIT_BAD_INPUT
    assert f"{dataset}:{named}" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_invalid_utf8_is_named(tmp_path, capsys):
    dataset = tmp_path / "latin1.jsonl"
    dataset.write_bytes('{"test_id":"a","intent":"faq","query":"caf\xe9","response":"r"}\n'.encode("latin-1"))
    assert run(tmp_path / "out", dataset) == EXIT_BAD_INPUT
    assert f"{dataset}:1: <line>: not valid UTF-8" in capsys.readouterr().err


def test_a_rubric_with_a_key_twice_or_a_nan_weight_is_bad_input(tmp_path, capsys):
    shipped = (Path(__file__).resolve().parents[2] / "datasets/rubrics/mangaassist-v3.yaml").read_text(encoding="utf-8")
    twice = tmp_path / "twice.yaml"
    twice.write_text(shipped + "\ngate:\n  min_pass_rate: 0.1\n", encoding="utf-8")
    nan = tmp_path / "nan.yaml"
    nan.write_text(shipped.replace("threshold: 0.75", "threshold: .nan", 1), encoding="utf-8")
    assert run(tmp_path / "a", FIXTURES / "cli_good.jsonl", "--rubric", str(twice)) == EXIT_BAD_INPUT
    assert "key 'gate' appears twice" in capsys.readouterr().err
    assert run(tmp_path / "b", FIXTURES / "cli_good.jsonl", "--rubric", str(nan)) == EXIT_BAD_INPUT
    assert "not a finite number" in capsys.readouterr().err


def test_an_internal_error_exits_3_not_1(tmp_path, monkeypatch, capsys):
    def broken(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(direct, "score_arm", broken)
    assert run(tmp_path / "out", FIXTURES / "cli_good.jsonl") == EXIT_RUN_FAILED
    assert "internal error: RuntimeError: boom" in capsys.readouterr().err


def test_a_killed_run_leaves_no_earlier_report_looking_current(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert run(out, FIXTURES / "cli_good.jsonl") == EXIT_PASSED
    assert (out / "report.json").exists()

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(direct, "score_arm", killed)
    assert run(out, FIXTURES / "cli_good.jsonl") == EXIT_RUN_FAILED
    assert not (out / "report.json").exists() and not (out / "results.jsonl").exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_an_unwritable_output_folder_exits_3_before_any_work(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setattr(direct, "score_arm", lambda *a, **k: pytest.fail("scored into an unwritable folder"))
    assert run(blocker / "out", FIXTURES / "cli_good.jsonl") == EXIT_RUN_FAILED
    assert "cannot write to" in capsys.readouterr().err


def test_a_missing_module_target_exits_3(tmp_path, capsys):
    code = run(tmp_path / "out", FIXTURES / "cli_good.jsonl", "--target", "python:no_such_module_here:answer")
    assert code == EXIT_RUN_FAILED
    assert "no_such_module_here" in capsys.readouterr().err


def test_missing_aws_region_exits_3(monkeypatch, capsys):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    # No region anywhere: the client cannot be built, so nothing is sent over the network.
    code = main(["approve-baseline", "--table", "t", "--bucket", "b", "--run-id", "r"])
    assert code == EXIT_RUN_FAILED
    assert "region" in capsys.readouterr().err.lower()


def test_outputs_are_whole_files(tmp_path):
    from fmquality.engines.outputs import write_atomically

    target = tmp_path / "report.json"
    write_atomically(target, json.dumps({"a": 1}))

    with pytest.raises(UnicodeEncodeError):
        write_atomically(target, "\ud800")  # a lone surrogate cannot be written as UTF-8
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
