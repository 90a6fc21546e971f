#!/usr/bin/env python3
"""Draws JMH results (the JSON of `-rf json`) as an SVG bar chart with error bars.

Usage: benchmarks/scripts/jmh-chart.py RESULT.json [MORE.json ...] docs/dedup-jmh.svg

One group of bars per benchmark method and parameter set other than `contender`, one bar per
contender, the score's 99.9 % confidence interval as the error bar (JMH's scoreConfidence).
Also prints the results as a Markdown table. Standard library only.
"""
import json
import sys
from html import escape

COLOURS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6"]


def load(path):
    with open(path) as f:
        runs = json.load(f)
    rows = []
    for r in runs:
        params = dict(r.get("params", {}))
        # benchmarks without contenders (the per-delivery CPU costs) are named by their class
        contender = (
            params.pop("contender", None)
            or params.pop("tracing", None)
            or r["benchmark"].rsplit(".", 2)[-2].replace("CpuBenchmark", "")
        )
        method = r["benchmark"].rsplit(".", 1)[-1]
        group = method + "".join(f", {k}={v}" for k, v in sorted(params.items()))
        m = r["primaryMetric"]
        lo, hi = m.get("scoreConfidence", [m["score"], m["score"]])
        rows.append((group, contender, m["score"], lo, hi, m["scoreUnit"], r.get("threads", 1)))
    return rows


def table(rows):
    out = ["| benchmark | contender | score | ± (99.9 %) | unit |", "|---|---|---|---|---|"]
    for group, contender, score, lo, hi, unit, _ in rows:
        digits = 0 if score >= 100 else 1
        out.append(f"| {group} | {contender} | {score:,.{digits}f} | {(hi - lo) / 2:,.{digits}f} | {unit} |")
    return "\n".join(out)


def svg(rows, title):
    groups = []
    for g, *_ in rows:
        if g not in groups:
            groups.append(g)
    contenders = []
    for _, c, *_ in rows:
        if c not in contenders:
            contenders.append(c)
    top = max(r[4] for r in rows)
    bar, gap, left, height, plot_top = 18, 24, 70, 320, 40
    width = left + len(groups) * (len(contenders) * bar + gap) + 160
    scale = height / top if top else 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 170}"'
        ' font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="20" font-size="14">{escape(title)}</text>',
    ]
    for i in range(5):
        v = top * i / 4
        y = plot_top + height - v * scale
        parts.append(f'<line x1="{left}" x2="{width - 160}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{v / 1e6:.1f}M</text>')
    for gi, g in enumerate(groups):
        x0 = left + gap / 2 + gi * (len(contenders) * bar + gap)
        for ci, c in enumerate(contenders):
            hit = [r for r in rows if r[0] == g and r[1] == c]
            x = x0 + ci * bar
            if not hit:
                parts.append(f'<text x="{x + bar / 2:.1f}" y="{plot_top + height - 4}"'
                             f' text-anchor="middle" fill="{COLOURS[ci % 6]}">✗</text>')
                continue
            _, _, score, lo, hi, _, _ = hit[0]
            y = plot_top + height - score * scale
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2}" height="{score * scale:.1f}"'
                         f' fill="{COLOURS[ci % 6]}"/>')
            cx = x + (bar - 2) / 2
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{plot_top + height - hi * scale:.1f}"'
                         f' y2="{plot_top + height - lo * scale:.1f}" stroke="#000"/>')
        label_x = x0 + len(contenders) * bar / 2
        parts.append(f'<text transform="translate({label_x:.1f},{plot_top + height + 12}) rotate(30)"'
                     f'>{escape(g)}</text>')
    for ci, c in enumerate(contenders):
        y = plot_top + 10 + ci * 16
        parts.append(f'<rect x="{width - 150}" y="{y - 9}" width="10" height="10" fill="{COLOURS[ci % 6]}"/>')
        parts.append(f'<text x="{width - 135}" y="{y}">{escape(c)}</text>')
    parts.append(f'<text x="{width - 150}" y="{plot_top + 20 + len(contenders) * 16}">✗ = run failed</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [row for path in sys.argv[1:-1] for row in load(path)]
    # The chart shows throughput (ops/s); the per-delivery CPU costs (ns/op) are in the table only.
    charted = [r for r in rows if r[5] == "ops/s"]
    if charted:  # a run of the ns/op benchmarks alone has nothing to chart
        with open(sys.argv[-1], "w") as f:
            f.write(svg(charted, "JMH: dedup hot path (ops/s; error bars: 99.9 % confidence)"))
    print(table(rows))


if __name__ == "__main__":
    main()
