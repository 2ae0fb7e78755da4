"""The report's inline SVG charts (no script, no network): bars of 0..1 values, the paired intervals
per subset and the per-case differences of a paired run."""

from __future__ import annotations

import html
import unicodedata

from fmquality.domain.report import PairedComparison, PairedInterval


def text_width(text: str, font_px: float = 12) -> float:
    """An upper estimate of ``text``'s width in a sans-serif font: wide (CJK) characters a full em,
    the others 0.62 em. Charts size their columns with it so that no label is clipped."""
    return sum(font_px if unicodedata.east_asian_width(c) in "WF" else font_px * 0.62 for c in text)


def bar_chart_svg(values: dict[str, float | None], *, threshold: float | None = None, width: int = 480) -> str:
    """Horizontal bars for 0..1 values, with an optional threshold line."""
    row, pad = 22, 6
    label_w = max([text_width(name) for name in values] + [60]) + 12
    height = row * max(len(values), 1) + pad * 2
    plot_w = width - label_w - 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, (name, value) in enumerate(values.items()):
        y = pad + i * row
        v = 0.0 if value is None else max(0.0, min(1.0, value))
        colour = "#1a7f37" if threshold is None or v >= threshold else "#cf222e"
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12">{_esc(name)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{plot_w * v:.1f}" height="{row - 8}" fill="{colour}"/>')
        text = "–" if value is None else f"{value:.2f}"
        parts.append(f'<text x="{label_w + plot_w * v + 4:.1f}" y="{y + 15}" font-size="12">{text}</text>')
    if threshold is not None:
        x = label_w + plot_w * threshold
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height}" stroke="#57606a" stroke-dasharray="4 3"/>')
    parts.append("</svg>")
    return "".join(parts)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def paired_chart_svg(paired: PairedComparison, min_plot_width: int = 380) -> str:
    """One row per subset (overall first): its bootstrap interval as a horizontal bar, the mean as a
    dot, against zero (solid line) and the subset's allowed drop (red tick). Regressed rows are
    highlighted. The label and value columns are as wide as their longest text (never clipped), and
    an axis value too close to another is left out (never overlapping)."""
    rows: list[PairedInterval] = ([paired.overall] if paired.overall else []) + list(paired.subsets)
    if not rows:
        return '<p class="muted">Too few pairs for an interval.</p>'
    labels = [f"{i.subset} (n={i.n})" for i in rows]
    values = [f"{i.mean_difference:+.3f} [{i.ci_low:+.3f}, {i.ci_high:+.3f}]{' regressed' if i.regressed else ''}"
              for i in rows]
    row, pad = 22, 8
    label_w = text_width(max(labels, key=text_width)) + 16
    text_w = text_width(max(values, key=text_width)) + 16
    plot_w = min_plot_width
    width = int(label_w + plot_w + text_w)
    low = min(min(i.ci_low for i in rows), min(-i.allowed_drop for i in rows), 0.0)
    high = max(max(i.ci_high for i in rows), 0.0)
    span = (high - low) or 0.01
    low, high = low - span * 0.05, high + span * 0.05

    def x(value: float) -> float:
        return label_w + (value - low) / (high - low) * plot_w

    height = pad * 2 + row * len(rows) + 16
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="paired differences by subset">']
    for i, interval in enumerate(rows):
        y = pad + i * row
        if interval.regressed:
            parts.append(f'<rect x="0" y="{y}" width="{width}" height="{row}" fill="#ffebe9" '
                         f'data-subset="{html.escape(interval.subset, quote=True)}" class="regressed"/>')
        colour = "#cf222e" if interval.regressed else "#0969da"
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" font-size="12">{_esc(labels[i])}</text>')
        parts.append(f'<rect x="{x(interval.ci_low):.1f}" y="{y + 7}" '
                     f'width="{max(1.0, x(interval.ci_high) - x(interval.ci_low)):.1f}" height="{row - 14}" '
                     f'fill="{colour}" opacity="0.55"/>')
        parts.append(f'<circle cx="{x(interval.mean_difference):.1f}" cy="{y + row / 2}" r="3.5" fill="{colour}"/>')
        tick = x(-interval.allowed_drop)
        parts.append(f'<line x1="{tick:.1f}" y1="{y + 3}" x2="{tick:.1f}" y2="{y + row - 3}" stroke="#cf222e" '
                     f'stroke-width="1.5" stroke-dasharray="3 2"/>')
        parts.append(f'<text x="{label_w + plot_w + 8}" y="{y + 15}" font-size="12">{values[i]}</text>')
    zero = x(0.0)
    bottom = pad + row * len(rows)
    parts.append(f'<line x1="{zero:.1f}" y1="{pad}" x2="{zero:.1f}" y2="{bottom}" stroke="#1b1f24"/>')
    placed: list[float] = []
    for value in (0.0, low, high):  # zero first: it is the one that must be read
        at = x(value)
        if any(abs(at - other) < 56 for other in placed):
            continue
        placed.append(at)
        parts.append(f'<text x="{at:.1f}" y="{bottom + 13}" text-anchor="middle" font-size="11" '
                     f'fill="#57606a">{value:+.3f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def difference_strip_svg(paired: PairedComparison, width: int = 900, height: int = 120) -> str:
    """The per-case differences sorted ascending, one bar each from zero (red below, green above)."""
    values = [i.difference for i in paired.items if i.difference is not None]
    if not values:
        return '<p class="muted">No case scored in both arms.</p>'
    extent = max(abs(v) for v in values) or 0.01
    pad, axis_w = 6, 50
    plot_w, mid = width - axis_w - pad, height / 2
    step = plot_w / len(values)
    scale = (height / 2 - pad) / extent
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="per-case differences">']
    for k, value in enumerate(values):
        if value == 0:
            continue
        h = abs(value) * scale
        y = mid - h if value > 0 else mid
        colour = "#1a7f37" if value > 0 else "#cf222e"
        parts.append(f'<rect x="{axis_w + k * step:.2f}" y="{y:.1f}" width="{max(step - 0.5, 0.5):.2f}" '
                     f'height="{max(h, 0.5):.1f}" fill="{colour}"/>')
    parts.append(f'<line x1="{axis_w}" y1="{mid}" x2="{width - pad}" y2="{mid}" stroke="#1b1f24"/>')
    parts.append(f'<text x="{axis_w - 4}" y="{pad + 9}" text-anchor="end" font-size="11" fill="#57606a">+{extent:.2f}</text>')
    parts.append(f'<text x="{axis_w - 4}" y="{mid + 4}" text-anchor="end" font-size="11" fill="#57606a">0</text>')
    parts.append(f'<text x="{axis_w - 4}" y="{height - pad}" text-anchor="end" font-size="11" fill="#57606a">−{extent:.2f}</text>')
    zeros = sum(1 for v in values if v == 0)
    parts.append(f'<text x="{width - pad}" y="{height - pad}" text-anchor="end" font-size="11" fill="#57606a">'
                 f'{len(values)} pairs, {zeros} unchanged</text>')
    parts.append("</svg>")
    return "".join(parts)
