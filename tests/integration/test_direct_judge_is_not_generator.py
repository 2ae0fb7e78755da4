"""Issue 20, item 6 on the direct engine: `fmquality run --engine direct` refuses a Bedrock judge whose
model is the one the target generates with, naming both, and exits 2 before any call is made."""

from __future__ import annotations

from pathlib import Path

JUDGE = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
SAME_MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"  # the same model, without the profile prefix
BUNDLE = "id: shop-assistant\nversion: '3'\nmodel_id: {model}\nsystem_prompt: You answer shoppers.\n"
DATASET = Path(__file__).resolve().parents[1] / "fixtures" / "cli_good.jsonl"


def test_fmquality_run_direct_exits_2_naming_both_models(tmp_path, capsys, monkeypatch):
    from fmquality.cli.main import main

    # No real endpoint: a client that is ever called fails the test.
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    bundle = tmp_path / "bundle.yaml"
    bundle.write_text(BUNDLE.format(model=SAME_MODEL), encoding="utf-8")
    out = tmp_path / "out"
    code = main(["run", "--engine", "direct", "--dataset", str(DATASET), "--out", str(out), "--quiet",
                 "--judge", "bedrock", "--judge-model-id", JUDGE, "--target", f"bedrock:{bundle}"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--target: the judge model" in err and JUDGE in err and SAME_MODEL in err
    assert not (out / "results.jsonl").exists()
