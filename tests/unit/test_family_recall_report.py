"""Per-family recall in every report (issue 30, item 4): a labelled run's summary.md and report.html,
and calibrate's output, show per defect family how many defective answers the judge mode caught;
a kind the family table does not know is shown as "other", never dropped."""

from __future__ import annotations

import json

from fmquality.domain.case import Label

from tests.unit.sensitivity_cases import EN_CHITCHAT, EN_PRODUCT, EN_TOTAL


def _labelled_set(tmp_path):
    bad_price = EN_PRODUCT.model_copy(update={"test_id": "bad-price", "label": Label(acceptable=False, defect="wrong_price"),
                                              "response": EN_PRODUCT.response.replace("$11.99", "$19.99")})
    odd = EN_TOTAL.model_copy(update={"test_id": "bad-odd", "label": Label(acceptable=False, defect="a kind of its own")})
    lines = [c.model_dump(mode="json", exclude_defaults=True) for c in (EN_PRODUCT, EN_CHITCHAT, bad_price, odd)]
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def _family_rows(markdown: str) -> dict[str, list[str]]:
    start = markdown.index("per defect family")
    rows = {}
    lines = markdown[start:].splitlines()
    for line in lines[lines.index("|---|---:|---:|---:|---|") + 1:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_a_labelled_run_reports_caught_and_total_per_family(tmp_path):
    from fmquality.cli.main import main

    out = tmp_path / "run"
    code = main(["run", "--engine", "direct", "--dataset", str(_labelled_set(tmp_path)), "--judge", "scripted",
                 "--workers", "1", "--out", str(out)])
    assert code in (0, 1)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    families = {f["family"]: f for f in report["calibration"]["families"]}
    assert set(families) == {"factual", "other"} and families["other"]["kinds"] == {"a kind of its own": 1}
    results = {json.loads(x)["test_id"]: json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()}
    assert families["factual"]["caught"] == (not results["bad-price"]["passed"])
    assert families["other"]["caught"] == (not results["bad-odd"]["passed"])
    rows = _family_rows((out / "summary.md").read_text(encoding="utf-8"))
    assert rows["factual"][:2] == [str(families["factual"]["caught"]), "1"] and rows["other"][1] == "1"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "per defect family" in html and "a kind of its own" in html


def test_calibrate_prints_the_family_table_per_set(tmp_path, capsys):
    from fmquality.cli.main import main

    assert main(["calibrate", "--dataset", str(_labelled_set(tmp_path)), "--judge", "scripted", "--workers", "1",
                 "--out", str(tmp_path / "cal")]) == 0
    printed = capsys.readouterr().out
    assert "per defect family" in printed and "other" in printed
    calibration = json.loads((tmp_path / "cal" / "calibration.json").read_text(encoding="utf-8"))
    [labelled] = calibration["sets"]
    assert [f["defective"] for f in labelled["calibration"]["families"]] == [1, 1]
