"""Plotly figures of the leaderboard, as plain JSON-able dicts ({"data": [...], "layout": {...}}).

Why plain dicts and not plotly.graph_objects: the site embeds figures as JSON for plotly.js to draw
(`templates/assets/javascripts/plots.js`); building and validating graph objects costs milliseconds per
figure and the synthetic dataset has hundreds of them. The shapes follow plotly.js's schema, the version
bundled with the installed plotly wheel (which the build copies into the site).

Every function takes the rows of one metrics query (bench.dataset.metrics) and only reshapes them:
no ranking or aggregation happens here. Text that comes from submissions (names, methods) is HTML-escaped
before it goes into a figure, because plotly.js interprets a subset of HTML in labels.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from html import escape
from typing import Any, Iterable

Row = dict[str, Any]
Figure = dict[str, Any]

_BASE_LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
    "hovermode": "closest",
    "legend": {"orientation": "h", "y": -0.2},
}

OUTCOME_LABELS = {
    "api_runtime_error": "API / runtime error",
    "wrong_output": "wrong output",
    "correct": "correct",
}
OUTCOME_COLORS = {"api_runtime_error": "#d62728", "wrong_output": "#ff7f0e", "correct": "#2ca02c"}


def text(value: Any) -> str:
    """A label safe to hand to plotly.js (which renders some HTML tags in text)."""
    return escape("" if value is None else str(value), quote=True)


def to_json(fig: Figure) -> str:
    """Compact JSON; NaN/inf become null so that JSON.parse in the browser accepts it."""
    return json.dumps(_finite(fig), separators=(",", ":"), allow_nan=False)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    layout = dict(_BASE_LAYOUT)
    layout["title"] = {"text": text(title), "font": {"size": 15}, "y": 0.98, "yanchor": "top"}
    layout.update(extra)
    return layout


def _name(names: dict[str, str], sub: str) -> str:
    return text(names.get(sub, sub))


def fast1_curves(rows: Iterable[Row], names: dict[str, str],
                 title: str = "fast1@N: share of workloads beating XLA") -> Figure:
    """One line per submission (labelled by its method): fast1 against the sample budget N."""
    lines: dict[str, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
    for r in rows:
        xs, ys = lines[r["submission"]]
        xs.append(r["n"])
        ys.append(r["fast1"])
    data = [
        {"type": "scatter", "mode": "lines", "name": _name(names, sub), "x": xs, "y": ys, "line": {"shape": "hv"}}
        for sub, (xs, ys) in lines.items()
    ]
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "samples per workload (N)"}},
            yaxis={"title": {"text": "fast1@N"}, "range": [0, 1.02], "tickformat": ".0%"},
        ),
    }


def _workload_axis(ids: list[str]) -> dict[str, Any]:
    """Bar traces keyed by workload: short ids on the axis ("19k"), the full id on hover. Full ids
    as tick labels took most of the figure's height and squashed the bars."""
    return {"x": [w.split("_", 1)[0] for w in ids], "customdata": list(ids),
            "hovertemplate": "%{customdata}: %{y:.3g}x<extra>%{fullData.name}</extra>"}


def per_benchmark_best(rows: Iterable[Row], names: dict[str, str],
                       title: str = "Best speedup over XLA per workload") -> Figure:
    """Grouped bars: per workload, each submission's best correct speedup (the paper's Figure 6)."""
    rows = list(rows)
    workloads = list(dict.fromkeys(r["workload"] for r in rows if r.get("best_speedup") is not None))
    series: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in rows:
        series[r["submission"]][r["workload"]] = r.get("best_speedup")
    data = [
        {"type": "bar", "name": _name(names, sub), **_workload_axis(workloads), "y": [vals.get(w) for w in workloads]}
        for sub, vals in series.items()
    ]
    return {
        "data": data,
        "layout": _layout(
            title,
            barmode="group",
            height=520,
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
            margin={"l": 60, "r": 20, "t": 130, "b": 60},
            xaxis={"tickangle": -60, "automargin": True},
            yaxis={"title": {"text": "speedup over XLA (x)"}, "type": "log"},
            shapes=[_hline(1.0)],
        ),
    }


def outcome_breakdown(rows: Iterable[Row], names: dict[str, str], title: str = "Per-sample outcomes") -> Figure:
    """Stacked horizontal bars of sample shares per submission (the paper's Figure 4).

    Rows are the wide form of the metrics API: `<outcome>_share` columns, one row per submission.
    """
    rows = list(rows)
    labels = [_name(names, r["submission"]) for r in rows]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": OUTCOME_LABELS[outcome],
            "y": labels,
            "x": [r.get(f"{outcome}_share") or 0.0 for r in rows],
            "marker": {"color": OUTCOME_COLORS[outcome]},
        }
        for outcome in OUTCOME_LABELS
    ]
    return {
        "data": data,
        "layout": _layout(
            title,
            barmode="stack",
            height=max(260, 110 + 26 * len(rows)),
            xaxis={"title": {"text": "share of samples"}, "tickformat": ".0%", "range": [0, 1]},
            yaxis={"automargin": True, "autorange": "reversed"},
        ),
    }


def roofline(rows: Iterable[Row], peak_tflops: float | None, peak_gbs: float | None, title: str) -> Figure:
    """Achieved TFLOP/s of each workload's XLA baseline against its operational intensity, under the chip's roof.

    `rows`: one per workload (workload, operational_intensity, baseline_tflops).
    """
    pts = [r for r in rows if r.get("operational_intensity") and r.get("baseline_tflops")]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "XLA baseline",
            "x": [r["operational_intensity"] for r in pts],
            "y": [r["baseline_tflops"] for r in pts],
            "text": [text(r["workload"]) for r in pts],
            "hovertemplate": "%{text}<br>OI %{x:.3g} FLOP/B<br>%{y:.3g} TFLOP/s<extra></extra>",
        }
    ]
    if peak_tflops and peak_gbs and pts:
        ridge = peak_tflops * 1e12 / (peak_gbs * 1e9)
        ois = [r["operational_intensity"] for r in pts]
        lo, hi = min(min(ois), ridge) / 4, max(max(ois), ridge) * 4
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "roof",
                "x": [lo, ridge, hi],
                "y": [lo * peak_gbs / 1e3, peak_tflops, peak_tflops],
                "line": {"dash": "dash"},
                "hoverinfo": "skip",
            }
        )
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "operational intensity (FLOP/byte)"}, "type": "log"},
            yaxis={"title": {"text": "achieved TFLOP/s"}, "type": "log"},
        ),
    }


def handtuned_vs_xla(rows: Iterable[Row], title: str = "Hand-tuned Pallas speedup over XLA") -> Figure:
    """One bar per workload with a hand-tuned reference (the paper's Figure 2b); rows: one per workload."""
    rows = [r for r in rows if r.get("hand_tuned_speedup") is not None]
    return {
        "data": [
            {
                "type": "bar",
                "name": "hand-tuned / XLA",
                "x": [r["workload"] for r in rows],
                "y": [r["hand_tuned_speedup"] for r in rows],
                "marker": {"color": ["#2ca02c" if r["hand_tuned_speedup"] >= 1 else "#d62728" for r in rows]},
            }
        ],
        "layout": _layout(
            title,
            xaxis={"tickangle": -45, "automargin": True},
            yaxis={"title": {"text": "speedup over XLA (x)"}, "type": "log"},
            shapes=[_hline(1.0)],
        ),
    }


def submission_bars(rows: Iterable[Row], title: str) -> Figure:
    """A submission's speedup per workload (correct kernels only), for its own page."""
    rows = list(rows)
    return {
        "data": [
            {
                "type": "bar",
                "name": "speedup",
                **_workload_axis([r["workload"] for r in rows]),
                "y": [r.get("speedup") if r.get("status") == "correct" else None for r in rows],
            }
        ],
        "layout": _layout(
            title,
            xaxis={"tickangle": -60, "automargin": True},
            yaxis={"title": {"text": "speedup over XLA (x)"}, "type": "log"},
            shapes=[_hline(1.0)],
        ),
    }


def _hline(y: float) -> dict[str, Any]:
    """A horizontal reference line as a layout shape (fig.add_hline costs ~14 ms per call; this is free)."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": y,
        "y1": y,
        "line": {"dash": "dot", "width": 1, "color": "#888"},
    }
