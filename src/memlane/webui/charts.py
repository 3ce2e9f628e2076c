"""Charts as inline SVG, drawn on the server from the engine's numbers: no charting library,
nothing to load. Each chart has a <title> and <desc> for screen readers, and the pages show
the same numbers as a table next to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from markupsafe import Markup

WIDTH = 640  # viewBox units by default; each SVG scales to its container (phone width too)
BAR_H = 22
COLORS = {"active": "#2f7d4f", "archived": "#b7791f", "deleted": "#b83232"}


def _svg(height: int, title: str, desc: str, body: list[str], width: int = WIDTH) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" preserveAspectRatio="xMinYMin meet" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title><desc>{escape(desc)}</desc>'
        + "".join(body) + "</svg>"
    )


def bars(items: Sequence[tuple[str, float]], title: str, *, fmt: str = "{:g}",
         limits: Sequence[float] | None = None, width: int = 480) -> Markup:
    """Horizontal bars, one per (label, value); `limits` draws each bar's budget as a frame."""
    label_w = 120
    top = max([v for _, v in items] + list(limits or []) + [1e-9])
    body: list[str] = []
    for i, (label, value) in enumerate(items):
        y = 6 + i * (BAR_H + 8)
        w = (width - label_w - 90) * value / top
        body.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" class="lbl">{escape(label)}</text>')
        if limits is not None:
            lw = (width - label_w - 90) * limits[i] / top
            body.append(f'<rect x="{label_w}" y="{y}" width="{lw:.1f}" height="{BAR_H}" class="limit"/>')
        over = limits is not None and value > limits[i]
        body.append(f'<rect x="{label_w}" y="{y}" width="{max(w, 1):.1f}" height="{BAR_H}" '
                    f'class="{"bar over" if over else "bar"}"/>')
        text = fmt.format(value) + (f" / {fmt.format(limits[i])}" if limits is not None else "")
        body.append(f'<text x="{label_w + max(w, 1) + 6:.1f}" y="{y + 16}" class="val">{escape(text)}</text>')
    desc = "; ".join(f"{label}: {fmt.format(v)}" for label, v in items)
    return _svg(12 + len(items) * (BAR_H + 8), title, desc, body, width)


def columns(values: Sequence[int], edges: Sequence[str], title: str, *, mark: float | None = None,
            mark_label: str = "", width: int = 480) -> Markup:
    """Vertical columns (a histogram) between `edges` (one more than the values, labelled on the
    axis); `mark` draws a vertical line at that fraction of the axis."""
    height, base, left = 220, 190, 36
    n = max(1, len(values))
    step = (width - left - 10) / n
    top = max(list(values) + [1])
    body = [f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" class="axis"/>',
            f'<text x="{left - 6}" y="20" text-anchor="end" class="val">{top}</text>']
    for i, edge in enumerate(edges):
        body.append(f'<text x="{left + i * step:.1f}" y="{base + 16}" text-anchor="middle" class="lbl">{escape(edge)}</text>')
    for i, v in enumerate(values):
        h = (base - 20) * v / top
        x = left + i * step
        body.append(f'<rect x="{x + 2:.1f}" y="{base - h:.1f}" width="{step - 4:.1f}" height="{h:.1f}" class="bar"/>')
        if v:
            body.append(f'<text x="{x + step / 2:.1f}" y="{base - h - 4:.1f}" text-anchor="middle" class="val">{v}</text>')
    if mark is not None:
        x = left + mark * (width - left - 10)
        body.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{base}" class="mark"/>'
                    f'<text x="{x + 4:.1f}" y="14" class="val">{escape(mark_label)}</text>')
    desc = "; ".join(f"{edges[i]}–{edges[i + 1]}: {v}" for i, v in enumerate(values))
    return _svg(height, title, desc, body, width)


def lines(days: Sequence[str], series: Mapping[str, Sequence[int]], names: Mapping[str, str], title: str,
          *, width: int = 760) -> Markup:
    """One line per series over the days, with a legend."""
    height, base, left = 200, 150, 36
    top = max([max(v, default=0) for v in series.values()] + [1])
    n = len(days)
    step = (width - left - 20) / max(1, n - 1)
    body = [f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" class="axis"/>',
            f'<text x="{left - 6}" y="20" text-anchor="end" class="val">{top}</text>',
            f'<text x="{left - 6}" y="{base}" text-anchor="end" class="val">0</text>']
    for j, (key, values) in enumerate(series.items()):
        pts = " ".join(f"{left + i * step:.1f},{base - (base - 20) * v / top:.1f}" for i, v in enumerate(values))
        color = COLORS.get(key, "#345")
        if n == 1:
            body.append(f'<circle cx="{left}" cy="{base - (base - 20) * values[0] / top:.1f}" r="4" fill="{color}"/>')
        else:
            body.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2.5"/>')
        lx = left + j * 160
        body.append(f'<rect x="{lx}" y="{base + 28}" width="12" height="12" fill="{color}"/>'
                    f'<text x="{lx + 18}" y="{base + 39}" class="lbl">{escape(names.get(key, key))}: '
                    f'{values[-1] if values else 0}</text>')
    if n:
        body.append(f'<text x="{left}" y="{base + 16}" class="lbl">{escape(days[0])}</text>'
                    f'<text x="{width - 10}" y="{base + 16}" text-anchor="end" class="lbl">{escape(days[-1])}</text>')
    desc = "; ".join(f"{names.get(k, k)} {v[-1] if v else 0}" for k, v in series.items())
    return _svg(height, title, desc, body, width)
