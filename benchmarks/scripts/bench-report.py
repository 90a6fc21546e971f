#!/usr/bin/env python3
"""Tables and charts from the harnesses' JSON (dev.postbox.benchmarks.Report).

Usage: benchmarks/scripts/bench-report.py RESULT.json [MORE.json ...] --svg-dir docs

For each file: prints a Markdown table (each peer's figures: median, min-max, every round) and its
goals (met or missed), and writes DIR/benchmarks-<harness>.svg: one panel per metric, a bar per
peer at its median with a min-max whisker. Standard library only.
"""
import json
import sys
from html import escape

COLOURS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477"]


def num(v):
    """A figure from the JSON: Jackson writes NaN (a measurement that failed) as the string "NaN"."""
    return float("nan") if v is None or isinstance(v, str) else v


def fmt(v):
    v = num(v)
    if v != v:  # NaN
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def table(doc):
    out = [
        f"**{doc['harness']}**: {doc['rounds']} rounds, interleaved, {doc['started']}; "
        + ", ".join(f"{k} {v}" for k, v in doc["machine"].items()),
        "",
        "| peer | metric | median | min – max | rounds |",
        "|---|---|---|---|---|",
    ]
    for f in doc["figures"]:
        rounds = " / ".join(fmt(v) for v in f["values"])
        out.append(
            f"| {f['peer']} | {f['metric']} ({f['unit']}) | **{fmt(f['median'])}** "
            f"| {fmt(f['min'])} – {fmt(f['max'])} | {rounds} |"
        )
    if doc["goals"]:
        out += ["", "| goal | median | |", "|---|---|---|"]
        for g in doc["goals"]:
            out.append(f"| {g['goal']} | {fmt(g['median'])} | {'met' if g['met'] else '**missed**'} |")
    return "\n".join(out)


def chart(doc):
    metrics = []
    for f in doc["figures"]:
        key = (f["metric"], f["unit"])
        if key not in metrics:
            metrics.append(key)
    width, label_w, bar_h, gap = 860, 300, 18, 6
    plot_w = width - label_w - 90
    parts, y = [], 40
    goals = {(g["peer"], g["metric"]): g for g in doc["goals"]}
    for metric, unit in metrics:
        rows = [f for f in doc["figures"] if f["metric"] == metric and f["unit"] == unit]
        top = max((num(x) for f in rows for x in (f["max"], f["median"]) if num(x) == num(x)), default=0) or 1
        for g in doc["goals"]:
            if g["metric"] == metric:
                top = max(top, g["target"])
        top *= 1.05
        parts.append(
            f'<text x="10" y="{y}" font-weight="bold">{escape(metric)} ({escape(unit)}),'
            " median and min–max</text>"
        )
        y += 12
        for i, f in enumerate(rows):
            x0 = label_w
            med, mn, mx = (0 if num(x) != num(x) else num(x) for x in (f["median"], f["min"], f["max"]))
            w = plot_w * med / top
            lo, hi = label_w + plot_w * mn / top, label_w + plot_w * mx / top
            cy = y + bar_h / 2
            parts.append(
                f'<text x="{label_w - 8}" y="{cy + 4}" text-anchor="end">{escape(f["peer"])}</text>'
            )
            parts.append(
                f'<rect x="{x0}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{COLOURS[i % len(COLOURS)]}"/>'
            )
            parts.append(
                f'<line x1="{lo:.1f}" y1="{cy}" x2="{hi:.1f}" y2="{cy}" stroke="#000"/>'
                f'<line x1="{lo:.1f}" y1="{y + 3}" x2="{lo:.1f}" y2="{y + bar_h - 3}" stroke="#000"/>'
                f'<line x1="{hi:.1f}" y1="{y + 3}" x2="{hi:.1f}" y2="{y + bar_h - 3}" stroke="#000"/>'
            )
            parts.append(f'<text x="{max(hi, x0 + w) + 6:.1f}" y="{cy + 4}">{fmt(f["median"])}</text>')
            g = goals.get((f["peer"], metric))
            if g:
                gx = label_w + plot_w * g["target"] / top
                colour = "#109618" if g["met"] else "#dc3912"
                parts.append(
                    f'<line x1="{gx:.1f}" y1="{y - 3}" x2="{gx:.1f}" y2="{y + bar_h + 3}" '
                    f'stroke="{colour}" stroke-width="2" stroke-dasharray="4,2"/>'
                )
                parts.append(
                    f'<text x="{gx + 3:.1f}" y="{y - 4}" font-size="10" fill="{colour}">goal {escape(g["op"])} '
                    f'{fmt(g["target"])}: {"met" if g["met"] else "missed"}</text>'
                )
            y += bar_h + gap
        y += 26
    title = (
        f"{doc['harness']}: median of {doc['rounds']} interleaved rounds, min–max whiskers, "
        f"{doc['machine'].get('cores', '?')} cores, {doc['started'][:10]}"
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        'font-family="sans-serif" font-size="12">'
        f'<rect width="100%" height="100%" fill="#fff"/><text x="10" y="20" font-size="14">{escape(title)}</text>'
    )
    return head + "".join(parts) + "</svg>\n"


def main(argv):
    if "--svg-dir" not in argv or argv.index("--svg-dir") == len(argv) - 1:
        sys.exit(__doc__)
    i = argv.index("--svg-dir")
    out_dir, files = argv[i + 1], argv[:i] + argv[i + 2 :]
    if not files:
        sys.exit(__doc__)
    for path in files:
        with open(path) as f:
            doc = json.load(f)
        print(table(doc))
        print()
        svg = f"{out_dir}/benchmarks-{doc['harness']}.svg"
        with open(svg, "w") as f:
            f.write(chart(doc))
        print(f"![{doc['harness']}](benchmarks-{doc['harness']}.svg)  (written: {svg})")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
