"""Chart semantics without a browser: one colour per meaning, readiness classes, workload order."""

from __future__ import annotations

import json

from bench.dataset import query_rows as qr
from bench.site import figures, palette

BOARD = [
    qr.LeaderboardRow.with_nulls(submission=s, kind=k)
    for s, k in (("a", "agent"), ("xla", "baseline"), ("b", "agent"), ("c", "agent"), ("d", "agent"))
]


def _colours(fig: dict) -> list[str]:
    """Every colour string anywhere in a figure."""
    text = json.dumps(fig)
    return [c for c in {palette.ERROR, palette.WRONG_OUTPUT, palette.CORRECT, palette.XLA_BASELINE} if c in text]


def test_series_never_take_an_outcome_colour_and_the_baseline_is_always_grey() -> None:
    assert not {palette.ERROR, palette.WRONG_OUTPUT, palette.CORRECT, palette.XLA_BASELINE} & set(palette.SERIES)
    colors = palette.submission_colors(BOARD)
    assert colors["xla"] == palette.XLA_BASELINE and len({colors[s] for s in "abcd"}) == 4
    rows = [
        qr.PerBenchmarkRow.with_nulls(submission=s, workload="1p_X", best_speedup=1.5)
        for s in ("a", "xla", "b", "c", "d")
    ]
    fig = figures.per_benchmark_best(rows, {}, colors=colors)
    assert {t["name"]: t["marker"]["color"] for t in fig["data"]}["xla"] == palette.XLA_BASELINE
    assert palette.ERROR not in _colours(fig)  # red means an error, never the 4th submission or the baseline
    roof = figures.roofline(
        [qr.RooflineRow.with_nulls(workload="w", operational_intensity=2.0, baseline_tflops=1.0)], 10.0, 5.0, "r"
    )
    assert roof["data"][0]["marker"]["color"] == palette.XLA_BASELINE and palette.ERROR not in _colours(roof)
    hand = figures.handtuned_vs_xla([qr.HandtunedVsXlaRow.with_nulls(workload="w", hand_tuned_speedup=0.5)])
    assert palette.ERROR not in _colours(hand)
    outcomes = figures.outcome_breakdown(
        [qr.OutcomeBreakdownRow.with_nulls(submission="a", api_runtime_error_share=1.0)], {}
    )
    assert {t["name"]: t["marker"]["color"] for t in outcomes["data"]}["API / runtime error"] == palette.ERROR


def test_readiness_classes_and_matrix_order() -> None:
    def cls(**values: object) -> str:
        return figures.readiness_class(qr.PerBenchmarkRow.with_nulls(submission="a", workload="w", **values))

    assert figures.readiness_class(None) == "missing" and cls() == "missing"
    assert cls(status="compile_error") == "error" and cls(status="incorrect") == "wrong"
    assert cls(status="correct", correct_unflagged=False, pending_flags=1) == "excluded"
    assert cls(status="correct", correct_unflagged=True, tpu_lowering=None) == "unknown"
    assert cls(status="correct", correct_unflagged=True, tpu_lowering="ok") == "ok"
    assert cls(status="correct", correct_unflagged=True, tpu_lowering="Mosaic: no") == "failed"
    rows = [
        qr.PerBenchmarkRow.with_nulls(
            submission="a", workload=w, status="correct", correct_unflagged=True, tpu_lowering="ok"
        )
        for w in ("11p_B", "1p_A", "2p_C")
    ]
    fig = figures.readiness_matrix(rows, {"a": "A"})
    heat = fig["data"][0]
    assert heat["x"] == ["1p", "2p", "11p"]  # the suite's order, not text order
    assert "speed" not in json.dumps(fig["layout"]).lower()
    colours = [c for _, c in heat["colorscale"]]
    assert palette.LOWERS_FOR_TPU in colours and palette.ERROR in colours


def test_legends_sit_above_the_plot_and_share_ticks_never_repeat() -> None:
    """Issue 43: the legend below the plot was drawn over the x axis's title; an axis of zeros printed its ticks as
    0%, 1%, 1%, 2% (".0%" at a 0.5% spacing)."""
    zeros = [qr.Fast1CurvesRow.with_nulls(submission="a", n=n, fast1=0.0, basis="measured") for n in (1, 2, 3)]
    for fig in (
        figures.fast1_curves(zeros, {}),
        figures.fast_p([qr.FastPRow.with_nulls(submission="a", p=p, fast_p=0.0) for p in figures.FAST_P], {}),
        figures.outcome_breakdown([qr.OutcomeBreakdownRow.with_nulls(submission="a", correct_share=1.0)], {}),
    ):
        legend = fig["layout"]["legend"]
        assert legend["y"] >= 1 and legend["yanchor"] == "bottom"  # above the plot area, clear of the axis titles
    for fig in (figures.fast1_curves(zeros, {}),):
        fmt = fig["layout"]["yaxis"]["tickformat"]
        top = fig["layout"]["yaxis"]["range"][1]
        ticks = [format(top * i / 5, fmt.replace("~", "")) for i in range(6)]  # plotly's d3 format, same spec
        assert len(set(ticks)) == len(ticks), ticks


def test_a_chart_of_its_own_height_gets_a_div_of_that_height() -> None:
    from bench.site.pages import plot

    fig = figures.outcome_breakdown([qr.OutcomeBreakdownRow.with_nulls(submission="a", correct_share=1.0)], {})
    assert f'style="min-height: {fig["layout"]["height"]}px"' in plot(fig, "o")
    assert "style=" not in plot(figures.fast1_curves([], {}), "f")
