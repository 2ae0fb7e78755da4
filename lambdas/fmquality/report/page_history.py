"""The trend panel of report.html: pass rate and mean composite over the last runs, from earlier runs'
report.json files (a history folder of run folders, or the runs/ folder the --out folder sits in),
drawn as a small inline SVG."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_RUNS_IN_TREND = 20
# A history folder is read to this depth (history/<run>/report.json, history/<group>/<run>/report.json).
_PATTERNS = ("report.json", "*/report.json", "*/*/report.json")


@dataclass(frozen=True)
class TrendPoint:
    run_id: str
    when: str  # finished_at, else started_at: the order of the runs
    pass_rate: float
    mean_composite: float | None
    dataset: str
    total_cases: int


def _point(data: dict[str, Any]) -> TrendPoint | None:
    when = data.get("finished_at") or data.get("started_at")
    if not isinstance(data.get("run_id"), str) or not when or not isinstance(data.get("pass_rate"), (int, float)):
        return None
    mean = data.get("mean_composite")
    return TrendPoint(run_id=data["run_id"], when=str(when), pass_rate=float(data["pass_rate"]),
                      mean_composite=float(mean) if isinstance(mean, (int, float)) else None,
                      dataset=str(data.get("dataset") or ""), total_cases=int(data.get("total_cases") or 0))


def read_history(folder: Path | None, current: dict[str, Any], limit: int = MAX_RUNS_IN_TREND) -> list[TrendPoint]:
    """The current run and the earlier runs of the same dataset file found under ``folder``, oldest
    first, at most ``limit``.
    An unreadable report.json is skipped: a trend is never worth failing a run's page."""
    points: dict[str, TrendPoint] = {}
    for path in sorted({p for pattern in _PATTERNS for p in (folder.glob(pattern) if folder else [])}):
        try:
            point = _point(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
        if point is not None:
            points[point.run_id] = point
    now = _point(current)
    if now is None:
        return []
    points[now.run_id] = now
    # Only runs of the same dataset file: another set's pass rate is not a trend of this one.
    same = [p for p in points.values() if _file_name(p.dataset) == _file_name(now.dataset)]
    return sorted(same, key=lambda p: (p.when, p.run_id))[-limit:]


def _file_name(location: str) -> str:
    return location.replace("\\", "/").rsplit("/", 1)[-1]


def trend_svg(points: list[TrendPoint], current_run: str, width: int = 720, height: int = 190) -> str:
    """Two lines on a 0..1 scale: pass rate (solid) and mean composite (dashed); the current run ringed."""
    if len(points) < 2:
        return ""
    left, right, top, bottom = 40, 16, 12, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / (len(points) - 1)

    def xy(i: int, value: float) -> tuple[float, float]:
        return left + i * step, top + (1 - max(0.0, min(1.0, value))) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="pass rate and mean composite over the last {len(points)} runs">']
    for value in (0.0, 0.5, 1.0):
        _, y = xy(0, value)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#d0d7de"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#57606a">{value:.1f}</text>')
    for attr, colour, dash in (("pass_rate", "#0969da", ""), ("mean_composite", "#8250df", ' stroke-dasharray="5 3"')):
        coords = [xy(i, getattr(p, attr)) for i, p in enumerate(points) if getattr(p, attr) is not None]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
    for i, p in enumerate(points):
        for attr, colour in (("pass_rate", "#0969da"), ("mean_composite", "#8250df")):
            value = getattr(p, attr)
            if value is None:
                continue
            x, y = xy(i, value)
            ring = ' stroke="#1b1f24" stroke-width="2"' if p.run_id == current_run else ""
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4.5 if ring else 3}" fill="{colour}"{ring}>'
                         f'<title>{html.escape(p.run_id)} ({html.escape(p.when[:19])}): {attr.replace("_", " ")} '
                         f'{value:.3f}, {p.total_cases} cases</title></circle>')
    first, last = points[0].when[:10], points[-1].when[:10]
    parts.append(f'<text x="{left}" y="{height - 26}" font-size="11" fill="#57606a">{html.escape(first)}</text>'
                 f'<text x="{width - right}" y="{height - 26}" text-anchor="end" font-size="11" fill="#57606a">'
                 f'{html.escape(last)}</text>')
    legend_y = height - 8
    parts.append(f'<line x1="{left}" y1="{legend_y - 4}" x2="{left + 22}" y2="{legend_y - 4}" stroke="#0969da" stroke-width="2"/>'
                 f'<text x="{left + 28}" y="{legend_y}" font-size="11">pass rate</text>'
                 f'<line x1="{left + 100}" y1="{legend_y - 4}" x2="{left + 122}" y2="{legend_y - 4}" stroke="#8250df" '
                 f'stroke-width="2" stroke-dasharray="5 3"/><text x="{left + 128}" y="{legend_y}" font-size="11">mean composite</text>')
    parts.append("</svg>")
    return "".join(parts)
