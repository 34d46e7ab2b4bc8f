"""Is a run's selected kernel faster than XLA? The leaderboard's own test, applied to the run's selection.

The agent's summary must not call a kernel "faster" on a point estimate whose interval contains 1 (issue 43).
The rule is the one the leaderboard applies (docs/methodology.md, "Faster than p x XLA"): a workload is faster
when its one-sided p-value, Holm-adjusted over the submission's workloads with an interval, is at most 2.5%
(its interval's lower bound, at the Holm-adjusted level, above 1); slower is the mirror test; neither is
"indistinguishable from XLA". For one workload that is "the 95% interval's lower bound above 1".

The rule is stated once, in bench/sql/base.sql (`speed_tests`): this module runs that very statement on the
run's selected samples in an in-memory DuckDB, it does not restate it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

_STATEMENT = "CREATE OR REPLACE TABLE speed_tests AS"


@dataclass(frozen=True)
class Verdict:
    verdict: str  # "faster" | "slower" | "indistinguishable"
    basis: str  # e.g. "interval, Holm over 3 workloads" | "point estimate (no interval)"

    def words(self) -> str:
        """The summary's phrase: 'faster than XLA', 'slower than XLA', 'indistinguishable from XLA'."""
        what = "indistinguishable from XLA" if self.verdict == "indistinguishable" else f"{self.verdict} than XLA"
        return f"{what} ({self.basis})"


def _speed_tests_sql() -> str:
    from bench.dataset.metrics import sql_text

    base = sql_text("base")
    start = base.index(_STATEMENT)
    return base[start : base.index(";", start) + 1]


def speed_verdicts(speedups: Mapping[str, tuple[float, tuple[float, float] | None]]) -> dict[str, Verdict]:
    """{workload: Verdict against 1x XLA} for {workload: (speedup, 95% interval or None)}: the leaderboard's
    speed_tests over these workloads as one submission's family."""
    if not speedups:
        return {}
    from bench.dataset.metrics import Metrics

    rows = [
        ("run", "run", w, float(s), ci[0] if ci else None, ci[1] if ci else None) for w, (s, ci) in speedups.items()
    ]
    with tempfile.TemporaryDirectory(prefix="jaxbench_verdict_") as empty:
        m = Metrics(empty, suite=[])
        try:
            m.con.execute("DELETE FROM judged")
            m.con.executemany(
                "INSERT INTO judged (track, submission, workload, speedup, speedup_ci_low, "
                "speedup_ci_high, ranked) VALUES (?, ?, ?, ?, ?, ?, true)",
                rows,
            )
            m.con.execute(_speed_tests_sql())
            found = m.con.execute("SELECT workload, verdict, basis FROM speed_tests WHERE p = 1.0").fetchall()
        finally:
            m.con.close()
    return {w: Verdict(v, b) for w, v, b in found}
