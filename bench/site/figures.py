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
import re
from collections import defaultdict
from collections.abc import Iterable
from html import escape
from typing import Any

from bench.dataset import query_rows as qr
from bench.dataset import schema
from bench.site import palette

Figure = dict[str, Any]

_BASE_LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 20, "t": 90, "b": 60},
    "hovermode": "closest",
    # The legend above the plot, under the title: below it (y -0.2) it was drawn over the x axis's title
    # ("share of samples" over "API / runtime error"). Plotly widens the top margin when the legend wraps.
    "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
    "colorway": list(palette.SERIES),  # never an outcome colour by accident (bench/site/palette.py)
}

OUTCOME_LABELS = {
    "api_runtime_error": "API / runtime error",
    "wrong_output": "wrong output",
    "correct": "correct",
    "integrity_excluded": "integrity flag (excluded)",
}
OUTCOME_COLORS = palette.OUTCOMES


#: Tick labels of a share axis: a tenth of a percent where the ticks are that close (an axis of zeros spans 0-2.5%
#: and ".0%" printed its ticks as 0%, 1%, 1%, 2%), trailing zeros trimmed (0%, 0.5%, 1%; 10%, 20%).
SHARE_TICKS = ".1~%"

#: Longest label a chart shows (legend entries, tooltips): submitted names can be long.
MAX_LABEL = 80


def text(value: Any) -> str:
    """A label safe to hand to plotly.js (which renders some HTML tags in text), cut to MAX_LABEL characters."""
    s = "" if value is None else str(value)
    return escape(s if len(s) <= MAX_LABEL else s[: MAX_LABEL - 1] + "…", quote=True)


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


def _color(colors: dict[str, str] | None, sub: str) -> dict[str, Any]:
    return {"color": colors[sub]} if colors and sub in colors else {}


#: Line dashes and marker symbols, cycled per series with its colour: two series that coincide, or a reader who
#: cannot tell the colours apart, still see every line (a legend entry's line is never hidden under another's).
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "triangle-down", "star", "hexagon", "pentagon")
#: Markers drawn at most this many times along one line (a 144-sample curve stays a line, not a bead string).
MARKERS_PER_LINE = 12


def series_style(i: int) -> dict[str, Any]:
    """Dash and marker of the i-th series (combined with its colour by the caller)."""
    return {"dash": DASHES[i % len(DASHES)], "symbol": SYMBOLS[i % len(SYMBOLS)]}


def _lines(
    rows: Iterable[qr.Fast1CurvesRow | qr.FastPRow | qr.BestSoFarCurvesRow],
    key: str,
    names: dict[str, str],
    dash: bool = False,
    colors: dict[str, str] | None = None,
    x: str = "n",
    shape: str = "hv",
) -> list[dict[str, Any]]:
    """One line per submission of (row.x, row.key), each with its own dash and markers; all dashed (and no
    markers cycle) for declared (unverified) data."""
    lines: dict[str, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
    for r in rows:
        xs, ys = lines[r.submission]
        xs.append(getattr(r, x))
        ys.append(getattr(r, key))
    out = []
    for i, (sub, (xs, ys)) in enumerate(lines.items()):
        style = series_style(i)
        out.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": _name(names, sub),
                "x": xs,
                "y": ys,
                "line": {"shape": shape, **_color(colors, sub), "dash": "dash" if dash else style["dash"], "width": 2},
                "marker": {
                    "symbol": style["symbol"],
                    "size": 7,
                    "maxdisplayed": MARKERS_PER_LINE,
                    **_color(colors, sub),
                },
            }
        )
    return out


def fitted_range(
    values: Iterable[Any], floor: float | None = None, ceiling: float | None = None, min_span: float = 0.02
) -> list[float]:
    """A y range that fits the data (a 10% margin, at least `min_span` wide), clipped to [floor, ceiling]:
    lines at 1-4% are not drawn flat against a 0-100% axis, nor lines at 1.00-1.04 against 0-1.05."""
    ys = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if not ys:
        return [floor if floor is not None else 0.0, ceiling if ceiling is not None else 1.0]
    lo, hi = min(ys), max(ys)
    pad = max((hi - lo) * 0.1, min_span / 2)
    lo, hi = lo - pad, hi + pad
    if floor is not None:
        lo = max(lo, floor)
    if ceiling is not None:
        hi = min(hi, ceiling)
    return [lo, hi]


def fast1_curves(
    rows: Iterable[qr.Fast1CurvesRow],
    names: dict[str, str],
    title: str = "fast1@N: share of workloads beating XLA",
    colors: dict[str, str] | None = None,
    dash: bool = False,
) -> Figure:
    """One line per submission (labelled by its method): fast1 against the sample budget N; the y axis fits the
    data (from 0, never past 100%)."""
    rows = list(rows)
    data = _lines(rows, "fast1", names, dash, colors)
    top = fitted_range([r.fast1 for r in rows], floor=0.0, ceiling=1.02, min_span=0.05)[1]
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={"title": {"text": "samples per workload (N)"}},
            yaxis={"title": {"text": "fast1@N (share of workloads)"}, "range": [0, top], "tickformat": SHARE_TICKS},
        ),
    }


#: The p of fast_p (bench/sql/fast_p.sql), in order.
FAST_P = (0.0, 1.0, 1.5, 2.0)


def fast_p(
    rows: Iterable[qr.FastPRow],
    names: dict[str, str],
    title: str = "fast_p: share of workloads faster than p × XLA",
    colors: dict[str, str] | None = None,
) -> Figure:
    """One line per submission over p = 0, 1, 1.5, 2: the share of the suite whose submitted kernel is correct and
    faster than p times XLA (KernelBench's fast_p; p = 0 is the share of correct kernels)."""
    rows = list(rows)
    data = _lines(rows, "fast_p", names, False, colors, x="p", shape="linear")
    return {
        "data": data,
        "layout": _layout(
            title,
            xaxis={
                "title": {"text": "p (faster than p × XLA)"},
                "tickvals": list(FAST_P),
                "ticktext": [f"{p:g}" for p in FAST_P],
                "range": [-0.1, 2.1],
            },
            yaxis={
                "title": {"text": "fast_p (share of workloads)"},
                "tickformat": SHARE_TICKS,
                "range": [0, fitted_range([r.fast_p for r in rows], floor=0.0, ceiling=1.02, min_span=0.05)[1]],
            },
        ),
    }


def workload_number(workload_id: str) -> int:
    """The leading number of a workload id ("11p_Megablox_GMM" -> 11): the suite's order, not text order."""
    m = re.match(r"(\d+)", str(workload_id))
    return int(m.group(1)) if m else 10**9


def _in_upstream_order(ids: Iterable[str]) -> list[str]:
    """Workload ids by their leading number (1p, 2p, ..., 11p)."""
    return sorted(dict.fromkeys(ids), key=lambda w: (workload_number(w), w))


def best_so_far_curves(
    rows: Iterable[qr.BestSoFarCurvesRow],
    names: dict[str, str],
    title: str = "Best-so-far speedup: floored geomean over the suite",
    colors: dict[str, str] | None = None,
) -> Figure:
    """One line per submission: the suite's floored geomean of each workload's best sample among the first N
    (the paper's Figure 3, left)."""
    rows = list(rows)
    return {
        "data": _lines(rows, "geomean", names, False, colors),
        "layout": _layout(
            title,
            xaxis={"title": {"text": "samples per workload (N)"}},
            yaxis={
                "title": {"text": "geomean speedup over XLA (x, floored at 1)"},
                "range": fitted_range([r.geomean for r in rows], floor=0.0, min_span=0.02),
                "tickformat": ".3~f",
            },
        ),
    }


def _workload_axis(ids: list[str]) -> dict[str, Any]:
    """Bar traces keyed by workload: short ids on the axis ("19k"), the full id on hover. Full ids
    as tick labels took most of the figure's height and squashed the bars."""
    return {
        "x": [w.split("_", 1)[0] for w in ids],
        "customdata": list(ids),
        "hovertemplate": "%{customdata}: %{y:.3g}x<extra>%{fullData.name}</extra>",
    }


def per_benchmark_best(
    rows: Iterable[qr.PerBenchmarkRow],
    names: dict[str, str],
    title: str = "Best speedup over XLA per workload",
    colors: dict[str, str] | None = None,
) -> Figure:
    """Grouped bars: per workload, each submission's best correct speedup (the paper's Figure 6)."""
    rows = list(rows)
    workloads = _in_upstream_order(r.workload for r in rows if r.best_speedup is not None)
    series: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in rows:
        series[r.submission][r.workload] = r.best_speedup
    data = [
        {
            "type": "bar",
            "name": _name(names, sub),
            **_workload_axis(workloads),
            "y": [vals.get(w) for w in workloads],
            "marker": _color(colors, sub),
        }
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


def outcome_breakdown(
    rows: Iterable[qr.OutcomeBreakdownRow], names: dict[str, str], title: str = "Per-sample outcomes"
) -> Figure:
    """Stacked horizontal bars of sample shares per submission (the paper's Figure 4).

    Rows are the wide form of the metrics API: `<outcome>_share` columns, one row per submission.
    """
    rows = list(rows)
    labels = [_name(names, r.submission) for r in rows]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": OUTCOME_LABELS[outcome],
            "y": labels,
            "x": [getattr(r, f"{outcome}_share") or 0.0 for r in rows],
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


def roofline(rows: Iterable[qr.RooflineRow], peak_tflops: float | None, peak_gbs: float | None, title: str) -> Figure:
    """Achieved TFLOP/s of each workload's XLA baseline against its operational intensity, under the chip's roof.

    `rows`: one per workload (workload, operational_intensity, baseline_tflops).
    """
    pts = [r for r in rows if r.operational_intensity and r.baseline_tflops]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "XLA baseline",
            "marker": {"color": palette.XLA_BASELINE},
            "x": [r.operational_intensity for r in pts],
            "y": [r.baseline_tflops for r in pts],
            "text": [text(r.workload) for r in pts],
            "hovertemplate": "%{text}<br>OI %{x:.3g} FLOP/B<br>%{y:.3g} TFLOP/s<extra></extra>",
        }
    ]
    if peak_tflops and peak_gbs and pts:
        ridge = peak_tflops * 1e12 / (peak_gbs * 1e9)
        ois = [r.operational_intensity for r in pts if r.operational_intensity]
        lo, hi = min(min(ois), ridge) / 4, max(max(ois), ridge) * 4
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "roof",
                "x": [lo, ridge, hi],
                "y": [lo * peak_gbs / 1e3, peak_tflops, peak_tflops],
                "line": {"dash": "dash", "color": palette.REFERENCE},
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


def handtuned_vs_xla(
    rows: Iterable[qr.HandtunedVsXlaRow | qr.WorkloadBaselinesRow], title: str = "Hand-tuned Pallas speedup over XLA"
) -> Figure:
    """One bar per workload with a hand-tuned reference (the paper's Figure 2b); rows: one per workload."""
    rows = [r for r in rows if r.hand_tuned_speedup is not None]
    return {
        "data": [
            {
                "type": "bar",
                "name": "hand-tuned / XLA",
                "x": [r.workload for r in rows],
                "y": [r.hand_tuned_speedup for r in rows],
                "marker": {"color": palette.SERIES[2]},  # one colour: the 1x line says faster or slower
            }
        ],
        "layout": _layout(
            title,
            xaxis={"tickangle": -45, "automargin": True},
            yaxis={"title": {"text": "speedup over XLA (x)"}, "type": "log"},
            shapes=[_hline(1.0)],
        ),
    }


def submission_bars(rows: Iterable[qr.SubmissionResultsRow], title: str) -> Figure:
    """A submission's speedup per workload (correct kernels only), for its own page, with each speedup's 95%
    interval as an error bar where the row has one."""
    rows = list(rows)
    ys = [r.speedup if r.status == "correct" else None for r in rows]
    lows = [r.speedup_ci_low if y is not None else None for r, y in zip(rows, ys, strict=True)]
    highs = [r.speedup_ci_high if y is not None else None for r, y in zip(rows, ys, strict=True)]
    bar: dict[str, Any] = {"type": "bar", "name": "speedup", **_workload_axis([r.workload for r in rows]), "y": ys}
    if any(v is not None for v in lows):
        bar["error_y"] = {
            "type": "data",
            "symmetric": False,
            "color": palette.REFERENCE,
            "array": [h - y if h is not None and y is not None else None for h, y in zip(highs, ys, strict=True)],
            "arrayminus": [
                y - lo if lo is not None and y is not None else None for lo, y in zip(lows, ys, strict=True)
            ],
        }
    return {
        "data": [bar],
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
        "line": {"dash": "dot", "width": 1, "color": palette.REFERENCE},
    }


#: Display classes of one (submission, workload) cell on a readiness track, in legend order: (key, label, colour).
READINESS_CLASSES = (
    ("missing", "no result", palette.MISSING),
    ("error", "error (compile, runtime, timeout, crash)", palette.ERROR),
    ("wrong", "wrong output", palette.WRONG_OUTPUT),
    ("excluded", "excluded by an integrity flag", palette.EXCLUDED),
    ("unknown", "correct; TPU lowering not checked", palette.LOWERING_UNKNOWN),
    ("failed", "correct; does not lower for TPU", palette.LOWERING_FAILED),
    ("ok", "correct; lowers for TPU (Mosaic)", palette.LOWERS_FOR_TPU),
)


def readiness_class(r: qr.PerBenchmarkRow | None) -> str:
    """The class of one per_benchmark row (status, correct_unflagged, pending_flags, tpu_lowering); None: no row.
    Not correct: by the status's outcome (schema.OUTCOME_OF_STATUS, the rule the samples' breakdown uses)."""
    if r is None or r.status is None:
        return "missing"
    outcome = schema.OUTCOME_OF_STATUS.get(r.status)
    if r.pending_flags or outcome == schema.INTEGRITY_EXCLUDED:
        return "excluded"
    if r.correct_unflagged:
        low = r.tpu_lowering
        return "unknown" if low is None else "ok" if low == "ok" else "failed"
    return "wrong" if outcome == "wrong_output" else "error"


def readiness_matrix(
    rows: Iterable[qr.PerBenchmarkRow], names: dict[str, str], title: str = "Correctness and TPU readiness per workload"
) -> Figure:
    """A submission x workload grid coloured by readiness class (what a CPU interpret-mode track measures).

    `rows`: per_benchmark rows; submissions appear in the order of `names` (leaderboard order)."""
    rows = list(rows)
    index = {key: i for i, (key, _, _) in enumerate(READINESS_CLASSES)}
    labels = {key: label for key, label, _ in READINESS_CLASSES}
    workloads = _in_upstream_order(r.workload for r in rows)
    cells: dict[str, dict[str, qr.PerBenchmarkRow]] = defaultdict(dict)
    for r in rows:
        cells[r.submission][r.workload] = r
    subs = [s for s in names if s in cells] + [s for s in cells if s not in names]
    z, hover = [], []
    for sub in subs:
        classes = [readiness_class(cells[sub].get(w)) for w in workloads]
        z.append([index[c] for c in classes])
        hover.append(
            [
                f"{text(w)}: {labels[c]}" + (f" ({text(cells[sub][w].tpu_lowering)})" if c == "failed" else "")
                for w, c in zip(workloads, classes, strict=True)
            ]
        )
    n = len(READINESS_CLASSES)
    scale = []
    for i, (_, _, colour) in enumerate(READINESS_CLASSES):
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    data: list[dict[str, Any]] = [
        {
            "type": "heatmap",
            "z": z,
            "x": [w.split("_", 1)[0] for w in workloads],
            "y": [_name(names, s) for s in subs],
            "text": hover,
            "hovertemplate": "%{y}<br>%{text}<extra></extra>",
            "colorscale": scale,
            "zmin": -0.5,
            "zmax": n - 0.5,
            "showscale": False,
            "xgap": 2,
            "ygap": 2,
        }
    ]
    data += [  # legend entries: heatmaps have none of their own
        {
            "type": "scatter",
            "mode": "markers",
            "x": [None],
            "y": [None],
            "name": text(label),
            "marker": {"color": colour, "symbol": "square", "size": 12},
            "hoverinfo": "skip",
        }
        for _, label, colour in READINESS_CLASSES
    ]
    return {
        "data": data,
        "layout": _layout(
            title,
            height=max(320, 220 + 30 * len(subs)),
            margin={"l": 60, "r": 20, "t": 120, "b": 60},
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
            xaxis={"tickangle": -60, "automargin": True, "type": "category"},
            yaxis={"automargin": True, "autorange": "reversed", "type": "category"},
        ),
    }
