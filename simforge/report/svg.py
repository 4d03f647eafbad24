"""Small inline-SVG charts for the HTML report: line chart, heatmap, histogram, bars with error
bars.

Hand-written on purpose: the report must be one self-contained file that renders offline (no
CDN script, as plotly's HTML would need, or a 6 MB inline bundle), and matplotlib would add a
large dependency for four chart kinds whose SVG is a few dozen elements each. Every text is
escaped; colours come from one palette that reads in grey scale too.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
DASHES = ["none", "8 4", "3 3", "10 3 2 3", "1 4", "6 2 6 6"]
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} {extra}>'
            f"{escape(text)}</text>")


def _axes(x0: int, y0: int, w: int, h: int, ymax: float, yfmt: str = "{:.0%}") -> list[str]:
    out = [f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + h}" stroke="#333"/>',
           f'<line x1="{x0}" y1="{y0 + h}" x2="{x0 + w}" y2="{y0 + h}" stroke="#333"/>']
    for i in range(5):
        v = ymax * i / 4
        y = y0 + h - h * i / 4
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(_text(x0 - 4, y + 4, yfmt.format(v), "end"))
    return out


def note(title: str, text: str, width: int = 520, height: int = 120) -> str:
    """A chart's place, titled, holding a sentence instead of a plot that would mislead."""
    body = [_text(width / 2, 16, title, extra='font-weight="bold"'),
            _text(width / 2, height / 2 + 4, text)]
    return _svg(width, height, body, title)


def line_chart(series: dict[str, dict[int, float]], *, title: str, xlabel: str = "k",
               width: int = 520, height: int = 280,
               colors: dict[str, str] | None = None) -> str:
    """One line per series over integer x (pass^k curves), y in [0, 1]."""
    x0, y0, w, h = 50, 30, width - 170, height - 70
    xs = sorted({x for s in series.values() for x in s}) or [1]
    lo, hi = xs[0], max(xs[-1], xs[0] + 1)
    body = [_text(width / 2, 16, title, extra='font-weight="bold"'), *_axes(x0, y0, w, h, 1.0)]

    def px(x: float) -> float:
        return x0 + w * (x - lo) / (hi - lo)

    for x in xs:
        body.append(_text(px(x), y0 + h + 15, str(x)))
    body.append(_text(x0 + w / 2, y0 + h + 32, xlabel))
    for i, (name, points) in enumerate(series.items()):
        color = (colors or {}).get(name, PALETTE[i % len(PALETTE)])
        coords = " ".join(f"{px(x):.1f},{y0 + h - h * v:.1f}" for x, v in sorted(points.items()))
        # each line its own dashes: equal curves (all at 100%) stay visible one over another
        dash = DASHES[i % len(DASHES)]
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                    f'stroke-dasharray="{dash}" points="{coords}"/>')
        for x, v in points.items():
            body.append(f'<circle cx="{px(x):.1f}" cy="{y0 + h - h * v:.1f}" r="3" '
                        f'fill="{color}"><title>{escape(name)} k={x}: {v:.3f}</title></circle>')
        ly = y0 + 14 * i
        body.append(f'<rect x="{x0 + w + 15}" y="{ly}" width="10" height="10" fill="{color}"/>')
        body.append(_text(x0 + w + 30, ly + 9, name[:22], "start"))
    return _svg(width, height, body, title)


def _diverging(delta: float | None) -> str:
    """Red for a drop, white for none, green for a gain (|delta| = 1 is full colour)."""
    if delta is None:
        return "#f0f0f0"
    d = max(-1.0, min(1.0, delta))
    if d < 0:
        t = -d
        return f"rgb(255,{int(255 - 170 * t)},{int(255 - 170 * t)})"
    return f"rgb({int(255 - 170 * d)},255,{int(255 - 170 * d)})"


def heatmap(rows: list[str], cols: list[str], cells: dict[tuple[str, str], dict[str, Any]],
            *, title: str) -> str:
    """Rows x columns coloured by ``delta_vs_none``; each cell shows pass rate and delta."""
    cw, ch, left, top = 110, 34, 230, 70
    width = left + cw * max(1, len(cols)) + 20
    height = top + ch * max(1, len(rows)) + 20
    body = [_text(width / 2, 16, title, extra='font-weight="bold"')]
    for j, col in enumerate(cols):
        body.append(_text(left + cw * j + cw / 2, top - 10, col[:18]))
    for i, row in enumerate(rows):
        y = top + ch * i
        body.append(_text(left - 8, y + ch / 2 + 4, row[-36:], "end"))
        for j, col in enumerate(cols):
            x = left + cw * j
            cell = cells.get((row, col))
            delta = cell.get("delta_vs_none") if cell else None
            body.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" '
                        f'fill="{_diverging(delta)}" stroke="#ccc"/>')
            if cell:
                rate = cell.get("pass_rate")
                label = "-" if rate is None else f"{100 * rate:.0f}%"
                if delta is not None:
                    label += f" ({100 * delta:+.0f}pp)"
                body.append(_text(x + cw / 2, y + ch / 2 + 4, label))
    return _svg(width, height, body, title)


def histogram(values: list[float], *, title: str, xlabel: str, bins: int = 20,
              width: int = 520, height: int = 240, color: str = PALETTE[0],
              whole: bool = False) -> str:
    """``whole``: the values are counts (steps), so bins are whole numbers wide and start on
    one, and the axis shows no fractions."""
    x0, y0, w, h = 50, 30, width - 70, height - 70
    body = [_text(width / 2, 16, title, extra='font-weight="bold"')]
    if not values:
        body.append(_text(width / 2, height / 2, "no data"))
        return _svg(width, height, body, title)
    lo, hi = min(values), max(values)
    if whole:
        lo, hi = float(math.floor(lo)), float(math.floor(hi) + 1)
        width_each = max(1, math.ceil((hi - lo) / bins))
        bins = math.ceil((hi - lo) / width_each)
        hi = lo + bins * width_each
    if hi <= lo:
        hi = lo + 1.0
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / step))] += 1
    top = max(counts)
    body += _axes(x0, y0, w, h, float(top), "{:.0f}")
    bw = w / bins
    for i, n in enumerate(counts):
        bh = h * n / top
        body.append(f'<rect x="{x0 + i * bw + 1:.1f}" y="{y0 + h - bh:.1f}" width="{bw - 2:.1f}" '
                    f'height="{bh:.1f}" fill="{color}"><title>{lo + i * step:.3g}-'
                    f'{lo + (i + 1) * step:.3g}: {n}</title></rect>')
    for i in range(0, bins + 1, max(1, bins // 5)):
        body.append(_text(x0 + i * bw, y0 + h + 15, f"{lo + i * step:.3g}"))
    body.append(_text(x0 + w / 2, y0 + h + 32, xlabel))
    return _svg(width, height, body, title)


def bars_with_ci(items: dict[str, dict[str, Any]], *, title: str, width: int = 520,
                 height: int = 260, colors: dict[str, str] | None = None) -> str:
    """Pass rate per group with its confidence interval as an error bar."""
    x0, y0, w, h = 50, 30, width - 70, height - 90
    body = [_text(width / 2, 16, title, extra='font-weight="bold"'), *_axes(x0, y0, w, h, 1.0)]
    n = max(1, len(items))
    bw = w / n
    for i, (name, v) in enumerate(items.items()):
        rate = v.get("pass_rate") or 0.0
        lo, hi = v.get("ci") or (rate, rate)
        x = x0 + i * bw
        body.append(f'<rect x="{x + bw * 0.2:.1f}" y="{y0 + h - h * rate:.1f}" '
                    f'width="{bw * 0.6:.1f}" height="{h * rate:.1f}" '
                    f'fill="{(colors or {}).get(name, PALETTE[i % len(PALETTE)])}"/>')
        cx = x + bw / 2
        body.append(f'<line x1="{cx:.1f}" y1="{y0 + h - h * lo:.1f}" x2="{cx:.1f}" '
                    f'y2="{y0 + h - h * hi:.1f}" stroke="#000" stroke-width="1.5"/>')
        body.append(_text(cx, y0 + h + 15, name[:16]))
        inside = rate > 0.9  # at the top, the label goes inside the bar, clear of the title
        body.append(_text(cx, y0 + h - h * rate + (14 if inside else -5), f"{100 * rate:.0f}%",
                          extra='fill="#fff"' if inside else ""))
    return _svg(width, height, body, title)


def timeline(calls: list[dict[str, Any]], faults: list[dict[str, Any]],
             messages: list[dict[str, Any]], *, title: str, width: int = 900) -> str:
    """One episode in simulated time: a row per tool call (a bar from start to end, red when it
    failed), the injected faults as triangles on the call they hit, and the messages as ticks
    on a top row (user above, agent below)."""
    left, top, row = 190, 44, 18
    times = [t for c in calls for t in (c.get("started_at"), c.get("ended_at")) if t is not None]
    times += [m["timestamp"] for m in messages if m.get("timestamp") is not None]
    times += [f["sim_time"] for f in faults if f.get("sim_time") is not None]
    end = max(times or [1.0]) or 1.0
    height = top + row * max(1, len(calls)) + 40
    w = width - left - 20

    def px(t: float) -> float:
        return left + w * t / end

    body = [_text(width / 2, 14, title, extra='font-weight="bold"'),
            _text(left - 8, top - 16, "messages", "end")]
    for m in messages:
        if m.get("timestamp") is None or m.get("role") == "tool":
            continue
        user = m.get("role") == "user"
        x = px(m["timestamp"])
        body.append(f'<rect x="{x - 1.5:.1f}" y="{top - (26 if user else 16)}" width="3" '
                    f'height="9" fill="{PALETTE[2] if user else PALETTE[4]}">'
                    f'<title>{escape(str(m.get("role")))} at {m["timestamp"]:.2f} s: '
                    f'{escape(str(m.get("content") or "")[:200])}</title></rect>')
    rows: dict[Any, float] = {}
    for i, c in enumerate(calls):
        y = top + row * i
        rows[c.get("call_id")] = y
        body.append(_text(left - 8, y + 12, f"{i + 1}. {str(c.get('tool'))[:24]}", "end"))
        start, stop = c.get("started_at"), c.get("ended_at")
        if start is None:
            continue
        stop = start if stop is None else stop
        color = PALETTE[1] if c.get("error") else PALETTE[0]
        error = ": " + escape(str(c["error"])[:120]) if c.get("error") else ""
        bar = max(2.0, px(stop) - px(start))
        body.append(f'<rect x="{px(start):.1f}" y="{y + 3}" width="{bar:.1f}" '
                    f'height="{row - 6}" fill="{color}"><title>{escape(str(c.get("tool")))} '
                    f'{start:.2f}-{stop:.2f} s{error}</title></rect>')
    for f in faults:
        hit = rows.get(f.get("call_id"))
        if hit is None or f.get("sim_time") is None:
            continue
        x = px(f["sim_time"])
        body.append(f'<path d="M{x:.1f},{hit + 1} l-5,-7 h10 z" fill="{PALETTE[3]}" stroke="#000" '
                    f'stroke-width="0.5"><title>{escape(str(f.get("kind")))} '
                    f'({escape(str(f.get("rule") or ""))}) at {f["sim_time"]:.2f} s</title></path>')
    axis_y = top + row * max(1, len(calls)) + 6
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{left + w}" y2="{axis_y}" stroke="#333"/>')
    for i in range(6):
        t = end * i / 5
        body.append(_text(px(t), axis_y + 14, f"{t:.3g}"))
    body.append(_text(left + w / 2, axis_y + 28, "simulated seconds"))
    return _svg(width, height, body, title)


def forest(rows: list[tuple[str, float, float | None, float | None]], *, title: str,
           width: int = 700) -> str:
    """Differences with their intervals, one row each (label, value, low, high), around a zero
    line: the eye finds the rows whose interval leaves zero. Values are proportions."""
    left, top, row = 330, 40, 20
    height = top + row * max(1, len(rows)) + 40
    w = width - left - 30
    span = max([abs(v) for _, v, _, _ in rows] + [abs(x) for _, _, lo, hi in rows
                                                   for x in (lo, hi) if x is not None] + [0.05])
    span = min(1.0, span * 1.1)

    def px(v: float) -> float:
        return left + w * (v + span) / (2 * span)

    body = [_text(width / 2, 16, title, extra='font-weight="bold"'),
            f'<line x1="{px(0):.1f}" y1="{top - 6}" x2="{px(0):.1f}" '
            f'y2="{top + row * len(rows)}" stroke="#999" stroke-dasharray="3 3"/>']
    for i, (label, value, lo, hi) in enumerate(rows):
        y = top + row * i + row / 2
        body.append(_text(left - 8, y + 4, label if len(label) <= 52 else "…" + label[-51:],
                          "end"))
        significant = lo is not None and hi is not None and (lo > 0 or hi < 0)
        color = (PALETTE[2] if value > 0 else PALETTE[1]) if significant else "#555"
        if lo is not None and hi is not None:
            body.append(f'<line x1="{px(lo):.1f}" y1="{y:.1f}" x2="{px(hi):.1f}" y2="{y:.1f}" '
                        f'stroke="{color}" stroke-width="2"/>')
        body.append(f'<circle cx="{px(value):.1f}" cy="{y:.1f}" r="4" fill="{color}">'
                    f'<title>{escape(label)}: {100 * value:+.1f} pp'
                    + (f" [{100 * lo:+.1f}, {100 * hi:+.1f}]" if lo is not None and hi is not None
                       else "") + '</title></circle>')
    axis = top + row * len(rows) + 8
    for v in (-span, -span / 2, 0.0, span / 2, span):
        body.append(_text(px(v), axis + 10, f"{100 * v:+.0f}"))
    body.append(_text(left + w / 2, axis + 26, "difference, points (B - A)"))
    return _svg(width, height, body, title)
