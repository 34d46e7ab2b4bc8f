"""The site's colours: one meaning per colour on every chart and badge.

Why one module: charts used to take plotly's default colour cycle, so red was "XLA baseline" in one chart
(the fourth series) and "API / runtime error" in another. Here the outcome colours (green = correct, orange =
wrong output, red = error) are reserved: submission series cycle through SERIES, which avoids them, and the
XLA baseline is always the same neutral grey. Every figure in bench/site/figures.py takes its colours from here.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.dataset.query_rows import AnyLeaderboardRow

#: Outcomes of a sample or an evaluation.
CORRECT = "#2ca02c"
WRONG_OUTPUT = "#ff7f0e"
ERROR = "#d62728"  # API / runtime error, compile error, crash, timeout: the candidate did not produce an output
EXCLUDED = "#9467bd"  # a pending integrity flag keeps the row out of the ranking
MISSING = "#d9d9d9"  # no result

#: TPU readiness of a correct kernel (readiness tracks).
LOWERS_FOR_TPU = "#1b5e20"  # correct and lowers for TPU (Mosaic)
LOWERING_FAILED = "#bcbd22"  # correct in interpret mode, but Mosaic refused it
LOWERING_UNKNOWN = "#98df8a"  # correct; not known whether it lowers (evaluated before the harness checked)

#: The XLA baseline wherever it appears (a series, a marker, the 1x line's label).
XLA_BASELINE = "#555555"
#: Reference lines (the 1x line, the roof).
REFERENCE = "#888888"

#: Colours of submission series, in leaderboard order: none of them is an outcome colour or the baseline grey.
SERIES = ("#1f77b4", "#17becf", "#8c564b", "#e377c2", "#3949ab", "#00897b", "#6d4c41", "#ad1457", "#5e35b1", "#0277bd")

#: Outcome key -> colour (keys of bench.dataset.schema.OUTCOMES).
OUTCOMES = {
    "api_runtime_error": ERROR,
    "wrong_output": WRONG_OUTPUT,
    "correct": CORRECT,
    "integrity_excluded": EXCLUDED,
}  # a measured sample with an excluding integrity flag


def submission_colors(leaderboard: Iterable[AnyLeaderboardRow]) -> dict[str, str]:
    """submission -> colour, by leaderboard order: the XLA baseline (kind 'baseline') grey, the others SERIES."""
    out: dict[str, str] = {}
    i = 0
    for r in leaderboard:
        if r.kind == "baseline":
            out[r.submission] = XLA_BASELINE
        else:
            out[r.submission] = SERIES[i % len(SERIES)]
            i += 1
    return out
