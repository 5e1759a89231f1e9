"""The replay report as one self-contained HTML page, and the comparison as CSV.

The page reads top to bottom: the inputs, the headline figures of each run (units and
percentages), the per-conf comparison when there are several confs, the trade-offs in
sentences, then the plots, embedded as ``data:`` URIs so the file can be mailed or attached
on its own. Everything comes from :mod:`simulator.report_view`.
"""

from __future__ import annotations

import base64
import csv
import html
import os
from collections.abc import Sequence

from simulator.report_view import Summary, columns_for, conf_label, headline, inputs_rows, trade_offs

STYLE = ("body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;color:#222}"
         "h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}"
         "table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}"
         "td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f6f6f6}"
         "figure{margin:1em 0}img{max-width:100%}li{margin:.3em 0}")


def _esc(text: object) -> str:
    return html.escape(str(text))


def _pairs(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{_esc(k)}</th><td class='n'>{_esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _comparison(summaries: Sequence[Summary]) -> str:
    cols = columns_for(summaries[0])
    head = "".join(f"<th>{_esc(c.header)}</th>" for c in cols)
    rows = "".join("<tr>" + "".join(f"<td class='{'n' if i else ''}'>{_esc(c.display(s))}</td>"
                                     for i, c in enumerate(cols)) + "</tr>" for s in summaries)
    return f"<table><tr>{head}</tr>{rows}</table>"


def _queues(summary: Summary) -> str:
    from simulator.queue_report import QUEUE_HEADERS, queue_rows

    head = "".join(f"<th>{_esc(h)}</th>" for h in QUEUE_HEADERS)
    rows = "".join("<tr>" + "".join(f"<td class='{'n' if i else ''}'>{_esc(v)}</td>" for i, v in enumerate(row))
                   + "</tr>" for row in queue_rows(dict(summary)))
    count = (summary.get("reclaims") or {}).get("count", 0)
    return f"<table><tr>{head}</tr>{rows}</table><p>Gangs evicted by reclaim across clusters: {_esc(count)}.</p>"


def _image(path: str) -> str:
    with open(path, "rb") as handle:
        data = base64.b64encode(handle.read()).decode("ascii")
    name = os.path.basename(path)
    return f"<figure><img src='data:image/png;base64,{data}' alt='{_esc(name)}'><figcaption>{_esc(name)}</figcaption></figure>"


def render(title: str, summaries: Sequence[Summary], images: Sequence[str]) -> str:
    """The page for one run (one summary) or a comparison (several, one per conf)."""
    parts = [f"<h1>{_esc(title)}</h1>"]
    shared = [(k, v) for k, v in inputs_rows(summaries[0]) if len(summaries) == 1 or k != "scheduler conf"]
    parts += ["<h2>Inputs</h2>", _pairs(shared)]
    if len(summaries) == 1:
        parts += ["<h2>Headline</h2>", _pairs(headline(summaries[0]))]
        if summaries[0].get("queues"):
            parts += [f"<h2>Queues ({_esc(summaries[0].get('queueScope') or 'fleet')})</h2>", _queues(summaries[0])]
    else:
        parts += ["<h2>Comparison</h2>", _comparison(summaries),
                  "<p>The same table is saved as <code>comparison.csv</code> next to this page.</p>"]
    parts += ["<h2>Trade-offs</h2>", "<ul>" + "".join(f"<li>{_esc(t)}</li>" for t in trade_offs(summaries)) + "</ul>"]
    pictures = [_image(p) for p in images if os.path.exists(p)]
    if pictures:
        parts += ["<h2>Plots</h2>", *pictures]
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
            f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n")


def write_report(out_dir: str, title: str, summaries: Sequence[Summary], images: Sequence[str]) -> str:
    """``out_dir/index.html``; ``images`` are paths (embedded, so the page stands alone)."""
    path = os.path.join(out_dir, "index.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render(title, summaries, images))
    return path


def write_comparison_csv(out_dir: str, summaries: Sequence[Summary]) -> str:
    """``out_dir/comparison.csv``: one row per conf, numbers without units (the unit is in the header)."""
    cols = columns_for(summaries[0])
    path = os.path.join(out_dir, "comparison.csv")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([c.csv_header() for c in cols])
        for s in summaries:
            writer.writerow([c.csv_value(s) for c in cols])
    return path


def report_title(summaries: Sequence[Summary]) -> str:
    mode = "openb, FGD protocol" if summaries[0].get("mode") != "jobs" else "job trace replay"
    trace = (summaries[0].get("inputs") or {}).get("trace") or ""
    if len(summaries) == 1:
        return f"{mode}: {trace} under {conf_label(summaries[0])}"
    return f"{mode}: {trace}, {len(summaries)} scheduler confs compared"
