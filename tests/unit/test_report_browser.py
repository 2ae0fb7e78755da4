"""report.html in a real headless browser (Chromium from the Debian packages; skipped where it is not
installed, and .ci/run installs it): the page loads with no script error, a filter narrows the table
(the human-label filter too, combined with the others), a hash changed on the open page is honoured,
an item's details show its answer, expected facts, hard failure, sub-scores and the rule that passed
it, and a paired run's control and difference columns stay within a 1,400 px window, details open or
not (read from the layout and seen in a screenshot)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from fmquality.config.rubric import load_rubric
from fmquality.domain.case import TestCase
from fmquality.domain.scores import DimensionScore, HardFailure
from fmquality.schemes.mangaassist import DIMENSIONS
from fmquality.report.build import build_report, results_to_jsonl
from fmquality.report.page import write_run_page
from fmquality.scoring.composite import combine

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: apt-get install chromium")
RUBRIC = load_rubric()


def _result(test_id: str, score: float, locale: str, answer: str, hard: bool = False, label: dict | None = None):
    case = TestCase(test_id=test_id, intent="return_request", locale=locale, query="返品できますか？", response=answer,
                    label=label)
    scores = {d: DimensionScore(dimension=d, status="scored", score=score)
              for d in DIMENSIONS}
    result = combine(case, RUBRIC, scores)
    if hard:
        scores["factual_accuracy"] = scores["factual_accuracy"].model_copy(update={
            "sub_scores": {"policy_accuracy": 0.0}, "evidence": ["policy_accuracy: '30日' contradicts '15日'"]})
        result = result.model_copy(update={"dimension_scores": scores, "passed": False, "hard_failures": [HardFailure(
            rule="policy_contradiction", dimension="factual_accuracy", sub_score="policy_accuracy",
            detail="'30日' (return) contradicts the knowledge ('15日')")]})
    return result


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    # Labels: ret-en-0 and -1 defective (both pass: the gate's misses), ret-en-2 acceptable, the rest none.
    labels = {0: {"acceptable": False}, 1: {"acceptable": False}, 2: {"acceptable": True}}
    results = [_result("ret-ja-bad", 0.4, "ja-JP", "30日以内に返品できます。", hard=True, label={"acceptable": False})] + \
              [_result(f"ret-en-{i}", 0.95, "en-US", "Within 15 days.", label=labels.get(i)) for i in range(5)]
    dataset = out / "golden.jsonl"
    dataset.write_text(json.dumps({"test_id": "ret-ja-bad", "expected_facts": ["商品到着後15日以内"]},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "report.json").write_text(build_report(results, RUBRIC, run_id="r", dataset=str(dataset)).model_dump_json())
    (out / "results.jsonl").write_text(results_to_jsonl(results), encoding="utf-8")
    return write_run_page(out, history=out / "none")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--virtual-time-budget=3000", *args], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def _dom(page: Path, fragment: str = "", size: str = "1400,900") -> str:
    return _chromium(f"--window-size={size}", "--dump-dom", page.as_uri() + fragment).stdout


def _with_script(page: Path, script: str, name: str) -> Path:
    """A copy of the page with ``script`` run after the page's own (in a timer: after the load)."""
    copy = page.with_name(name)
    copy.write_text(page.read_text(encoding="utf-8").replace(
        "</body></html>", f"<script>setTimeout(function(){{{script}}},200);</script></body></html>"), encoding="utf-8")
    return copy


def _rows(dom: str) -> list[str]:
    body = re.search(r'<tbody id="rows">(.*?)</tbody>', dom, re.S).group(1)
    return re.findall(r'<tr data-id="([^"]+)"', body)


def test_the_page_loads_with_every_item_failing_first(page):
    dom = _dom(page)
    assert _rows(dom) == ["ret-ja-bad"] + [f"ret-en-{i}" for i in range(5)]
    assert "6 of 6 items" in dom and "1 item(s) with hard failures" in dom


def test_a_filter_narrows_the_table(page):
    assert _rows(_dom(page, "#filter=locale=en-US&status=passed")) == [f"ret-en-{i}" for i in range(5)]
    assert _rows(_dom(page, "#filter=status=hard")) == ["ret-ja-bad"]


def test_an_items_details_show_answer_expected_facts_and_evidence(page):
    pane = re.search(r'<aside class="pane" id="pane">(.*?)</aside>', _dom(page, "#item=ret-ja-bad"), re.S).group(1)
    assert "30日以内に返品できます。" in pane and "商品到着後15日以内" in pane
    assert "policy_contradiction" in pane and "policy_accuracy" in pane and 'lang="ja"' in pane


def test_the_human_label_filter_combines_with_the_others(page):
    assert _rows(_dom(page, "#filter=label=defective&status=passed")) == ["ret-en-0", "ret-en-1"]
    assert _rows(_dom(page, "#filter=label=defective")) == ["ret-ja-bad", "ret-en-0", "ret-en-1"]
    assert _rows(_dom(page, "#filter=label=acceptable")) == ["ret-en-2"]
    assert _rows(_dom(page, "#filter=label=unlabelled&locale=en-US")) == ["ret-en-3", "ret-en-4"]
    dom = _dom(page)
    assert '<select id="f-label">' in dom
    # "Look at first" links the gate's misses against the labels to that filter.
    assert 'data-filter="label=defective&amp;status=passed">2 item(s) labelled defective passed' in dom


def test_a_hash_changed_on_the_open_page_is_honoured(page):
    changed = _with_script(page, 'location.hash="#filter=label=defective&status=passed";', "hash-filter.html")
    assert _rows(_dom(changed)) == ["ret-en-0", "ret-en-1"]
    opened = _with_script(page, 'location.hash="#item=ret-en-0";', "hash-item.html")
    pane = re.search(r'<aside class="pane" id="pane">(.*?)</aside>', _dom(opened, "#filter=status=hard"), re.S).group(1)
    assert "ret-en-0" in pane and "defective" in pane


def test_a_passing_item_says_which_rule_let_it_pass(page):
    pane = re.search(r'<aside class="pane" id="pane">(.*?)</aside>', _dom(page, "#item=ret-en-0"), re.S).group(1)
    why = re.search(r'<div class="why ok" id="why">([^<]*)</div>', pane).group(1)
    assert why.startswith("passes: no hard failure, no judge verdict at its lowest level, composite 0.950")
    assert "Any other sub-score, however low, only weighs in the composite." in pane
    bad = _dom(page, "#item=ret-ja-bad")
    assert re.search(r'<div class="why no" id="why">fails: hard failure policy_contradiction', bad)


# ---- a paired run at 1,400 px -------------------------------------------------------------------

@pytest.fixture(scope="module")
def paired_page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("paired")
    tags = ["regression", "japanese", "policy-returns-window"]

    def arm(score_of, arm_name):
        results = []
        for i in range(24):
            case = TestCase(test_id=f"product-question-ja-{i:03d}-long-identifier", intent="product_question",
                            locale="ja-JP", query="この巻はいつ発売ですか？", response="来月発売です。" * 12, tags=tags)
            scores = {d: DimensionScore(dimension=d, status="scored", score=1.0 if d == "safety" else score_of(i))
                      for d in DIMENSIONS}
            results.append(combine(case, RUBRIC, scores).model_copy(update={"arm": arm_name}))
        return results

    candidate = arm(lambda i: 0.7 if i % 3 == 0 else 0.93, "candidate")
    control = arm(lambda i: 0.9, "control")
    (out / "report.json").write_text(build_report(candidate, RUBRIC, run_id="p", dataset="d.jsonl",
                                                  control_results=control).model_dump_json())
    (out / "results.jsonl").write_text(results_to_jsonl(candidate), encoding="utf-8")
    (out / "control_results.jsonl").write_text(results_to_jsonl(control), encoding="utf-8")
    return write_run_page(out, history=out / "none")


KEY_COLUMNS = ("score", "control", "diff")  # the composite's, the control's and the difference's headers
PROBE = ('document.getElementById("sec-items").scrollIntoView();'
         'var box=document.querySelector(".tablebox").getBoundingClientRect(),o={width:innerWidth,box:[box.left,box.right]};'
         + "".join(f'var e=document.querySelector(\'th[data-key="{c}"]\').getBoundingClientRect();o["{c}"]=[e.left,e.right,e.top,e.bottom];'
                   for c in KEY_COLUMNS)
         + 'var p=document.createElement("pre");p.id="probe";p.textContent=JSON.stringify(o);document.body.appendChild(p);')


def _probe(page: Path, fragment: str) -> dict:
    dom = _dom(_with_script(page, PROBE, "probe.html"), fragment)
    return json.loads(re.search(r'<pre id="probe">([^<]*)</pre>', dom).group(1).replace("&quot;", '"'))


@pytest.mark.parametrize("fragment", ["", "#item=product-question-ja-000-long-identifier"])
def test_paired_control_and_difference_columns_are_within_1400_px(paired_page, fragment):
    probe = _probe(paired_page, fragment)
    assert probe["width"] == 1400
    visible_right = min(probe["width"], probe["box"][1])  # the table's box clips what it scrolls
    for column in KEY_COLUMNS:
        left, right, top, bottom = probe[column]
        assert 0 <= left and right <= visible_right, (column, probe)
        assert 0 <= top < bottom <= 900, (column, probe)


# Each key header painted in a colour of its own, to be found in the screenshot.
MARKS = {"score": (255, 0, 255), "control": (0, 200, 255), "diff": (255, 160, 0)}


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB(A) rows of a PNG Chromium wrote (8-bit, not interlaced)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, idat = 8, {}, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        idat += body if kind == b"IDAT" else b""
        chunks.setdefault(kind, body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, previous = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = previous[x], previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def _marked_columns(png: Path) -> dict[str, int]:
    width, _, rows = _png_pixels(png)
    bpp = len(rows[0]) // width
    counts = dict.fromkeys(MARKS, 0)
    for row in rows:
        for x in range(0, len(row), bpp):
            pixel = tuple(row[x:x + 3])
            for name, colour in MARKS.items():
                if all(abs(p - q) <= 6 for p, q in zip(pixel, colour)):
                    counts[name] += 1
    return counts


@pytest.mark.parametrize("fragment", ["", "#item=product-question-ja-000-long-identifier"])
def test_a_1400_px_screenshot_shows_the_paired_key_columns(paired_page, tmp_path, fragment):
    paint = "".join(f'document.querySelector(\'th[data-key="{c}"]\').style.cssText="background:rgb{rgb};color:rgb{rgb}";'
                    for c, rgb in MARKS.items())
    marked = _with_script(paired_page, paint, "marked.html")  # as the page opens: not scrolled
    png = tmp_path / "paired-1400.png"  # a temporary file: look at it with an image viewer when this fails
    _chromium("--window-size=1400,900", f"--screenshot={png}", marked.as_uri() + fragment)
    width, height, _ = _png_pixels(png)
    assert (width, height) == (1400, 900)
    counts = _marked_columns(png)
    assert all(n >= 200 for n in counts.values()), counts  # each header's cell is on screen, not scrolled away
