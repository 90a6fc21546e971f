#!/usr/bin/env python3
"""Renders docs/ops/postbox-dashboard.json as an HTML page from a live Prometheus.

Grafana cannot be installed on the machines this project is built on, so this draws the
dashboard's own panels (its layout, titles, queries and legends) from the same Prometheus
queries: stat panels show the last value, time series panels a line per series. The page is then
photographed with headless Chromium by scripts/dashboard-screenshot.sh.

    scripts/dashboard-render.py --prometheus http://127.0.0.1:9090 --minutes 10 --out page.html

Dashboard variables ($job, $instance, $subscription) take every value; $__rate_interval is 30s.
Standard library only.
"""
import argparse
import html
import json
import re
import time
import urllib.parse
import urllib.request

COLORS = ["#3274d9", "#e0752d", "#56a64b", "#a352cc", "#d44a3a", "#e5ac0e", "#2d9cdb", "#8c564b"]
CELL_W, CELL_H = 62, 34  # pixels per grid column and per grid row


def query(prom, path, params):
    url = prom.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise SystemExit(f"Prometheus refused {params}: {body}")
    return body["data"]["result"]


def expand(expr):
    expr = re.sub(r"\$__rate_interval", "30s", expr)
    return re.sub(r"\$\{?(job|instance|subscription)\}?", ".*", expr)


def legend(fmt, labels):
    if not fmt:
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt)


def number(v):
    if v != v:  # NaN
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10 or v == int(v):
        return f"{v:.0f}"
    if abs(v) >= 0.1:
        return f"{v:.2f}"
    return f"{v:.2g}"


def stat_panel(p, prom, w, h):
    values = []
    for t in p.get("targets", []):
        for s in query(prom, "/api/v1/query", {"query": expand(t["expr"])}):
            values.append(float(s["value"][1]))
    text = number(values[0]) if values else "no data"
    return (
        f'<svg width="{w}" height="{h - 28}"><text x="{w / 2}" y="{(h - 28) / 2 + 14}" '
        f'text-anchor="middle" font-size="40" fill="#56a64b">{html.escape(text)}</text></svg>'
    )


def series_panel(p, prom, w, h, start, end, step):
    lines = []
    for t in p.get("targets", []):
        for s in query(
            prom,
            "/api/v1/query_range",
            {"query": expand(t["expr"]), "start": start, "end": end, "step": step},
        ):
            pts = [(float(x), float(y)) for x, y in s["values"] if y not in ("NaN", "+Inf", "-Inf")]
            if pts:
                lines.append((legend(t.get("legendFormat"), s["metric"]), pts))
    ph = h - 28 - 22 * max(1, (len(lines) + 1) // 2)
    left, bottom = 52, 18
    pw = w - left - 10
    top_v = max([y for _, pts in lines for _, y in pts] + [0]) or 1
    out = [f'<svg width="{w}" height="{ph + 4}" font-size="10">']
    for i in range(5):
        v = top_v * i / 4
        y = 6 + (ph - bottom) * (1 - i / 4)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{left - 4}" y="{y + 3}" text-anchor="end" fill="#666">{number(v)}</text>')
    for k in range(0, 5):
        t = start + (end - start) * k / 4
        x = left + pw * k / 4
        label = time.strftime("%H:%M", time.gmtime(t))
        out.append(f'<text x="{x}" y="{ph}" text-anchor="middle" fill="#666">{label}</text>')
    for i, (name, pts) in enumerate(lines):
        c = COLORS[i % len(COLORS)]
        coords = " ".join(
            f"{left + pw * (x - start) / (end - start):.1f},{6 + (ph - bottom) * (1 - y / top_v):.1f}"
            for x, y in pts
        )
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.6" points="{coords}"/>')
    if not lines:
        out.append(f'<text x="{w / 2}" y="{ph / 2}" text-anchor="middle" fill="#999">no data</text>')
    out.append("</svg>")
    keys = "".join(
        f'<span class="key"><i style="background:{COLORS[i % len(COLORS)]}"></i>{html.escape(n)}</span>'
        for i, (n, _) in enumerate(lines)
    )
    return "".join(out) + f'<div class="keys">{keys}</div>'


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--prometheus", default="http://127.0.0.1:9090")
    a.add_argument("--dashboard", default="docs/ops/postbox-dashboard.json")
    a.add_argument("--minutes", type=float, default=10)
    a.add_argument("--out", required=True)
    args = a.parse_args()
    with open(args.dashboard) as f:
        dash = json.load(f)
    end = time.time()
    start = end - args.minutes * 60
    step = max(5, int(args.minutes * 60 / 120))
    cells = []
    bottom = 0
    for p in dash["panels"]:
        g = p["gridPos"]
        x, y, w, h = g["x"] * CELL_W, g["y"] * CELL_H, g["w"] * CELL_W - 8, g["h"] * CELL_H - 8
        bottom = max(bottom, y + h)
        title = html.escape(p.get("title", ""))
        if p["type"] == "row":
            cells.append(f'<div class="row" style="left:{x}px;top:{y}px;width:{w}px">{title}</div>')
            continue
        body = (
            stat_panel(p, args.prometheus, w, h)
            if p["type"] == "stat"
            else series_panel(p, args.prometheus, w, h, start, end, step)
        )
        cells.append(
            f'<div class="panel" style="left:{x}px;top:{y}px;width:{w}px;height:{h}px">'
            f"<h3>{title}</h3>{body}</div>"
        )
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(end))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><style>
body {{ font-family: sans-serif; margin: 12px; background: #f4f5f5; }}
header {{ font-size: 18px; margin-bottom: 8px; }} header small {{ color: #666; font-size: 12px; }}
.board {{ position: relative; height: {bottom + 10}px; }}
.panel {{ position: absolute; background: #fff; border: 1px solid #ddd; border-radius: 3px; overflow: hidden; }}
.panel h3 {{ font-size: 12px; margin: 6px 8px 4px; color: #333; }}
.row {{ position: absolute; font-weight: bold; font-size: 14px; }}
.keys {{ font-size: 10px; padding: 0 8px; }} .key {{ margin-right: 10px; white-space: nowrap; }}
.key i {{ display: inline-block; width: 10px; height: 3px; margin-right: 4px; vertical-align: middle; }}
</style></head><body><header>{html.escape(dash.get("title", "Postbox"))}
<small>rendered from Prometheus by scripts/dashboard-render.py, last {args.minutes:g} min, {stamp}</small></header>
<div class="board">{"".join(cells)}</div></body></html>"""
    with open(args.out, "w") as f:
        f.write(page)
    print(f"wrote {args.out} ({len(dash['panels'])} panels, {bottom + 60} px high)")


if __name__ == "__main__":
    main()
