"""What does a hostile submission folder cost the intake? Prints, per case of issue #13 (target: each one a
validation problem within 1 s and 100 MB, leaving data/ byte-identical):

- `bench validate`'s check: wall time, this process's CPU time, tracemalloc peak (Python allocations);
- `bench ingest` of that folder beside an existing dataset (fake evaluator): wall time, and whether every
  file on disk is unchanged afterwards;
- the shipped submissions validated, for scale.

The cases are the ones tests/dataset/test_validate_hostile.py asserts on (the memory bound only: time is never
asserted in a test, these figures are for a person to read, with the load average).

    .venv/bin/python benchmarks/intake.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.dataset.ingest import ingest  # noqa: E402
from bench.dataset.validate import check, submission_dirs  # noqa: E402
from bench.paths import SUBMISSIONS_DIR  # noqa: E402
from tests.dataset.conftest import FAKE_EVALUATOR, WORKLOADS, make_submission  # noqa: E402
from tests.dataset.test_validate_hostile import CASES, _tree  # noqa: E402
from tests.dataset.test_validate_hostile import measured as measured_peak  # noqa: E402


def measured(fn: Callable[[], object]) -> tuple[object, float, int]:
    """(result, CPU seconds of this process, tracemalloc peak bytes) of a read-only call, made twice: the CPU
    time untraced (tracemalloc's own bookkeeping made a 0.3 s parse read 1.2 s on a loaded CI machine), then
    the memory peak under tracemalloc (as the test measures it)."""
    c0 = time.process_time()
    fn()
    cpu = time.process_time() - c0
    out, peak = measured_peak(fn)
    return out, cpu, peak


def _case(name: str, repeats: int) -> dict[str, object]:
    build, _ = CASES[name]
    walls, cpus, peaks, ingest_walls, unchanged = [], [], [], [], True
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            good = tmp_path / "good_subs"
            make_submission(good, "good", {"8p_GEMM": ""})
            data = tmp_path / "data"
            ingest(data_dir=data, submissions_dir=good, chip="cpu", size="small", workers=1, evaluator=FAKE_EVALUATOR)
            subs = tmp_path / "subs"
            subs.mkdir()
            root = build(subs)
            t0 = time.perf_counter()
            (sub, problems), cpu, peak = measured(lambda root=root: check(root, set(WORKLOADS)))
            walls.append(time.perf_counter() - t0)
            cpus.append(cpu)
            peaks.append(peak)
            assert sub is None and problems, name
            before = _tree(tmp_path)
            t0 = time.perf_counter()
            report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1,
                            evaluator=FAKE_EVALUATOR)
            ingest_walls.append(time.perf_counter() - t0)
            unchanged &= _tree(tmp_path) == before and report.skipped == [str(root)]
            first = str(problems[0])
    return {"case": name, "check_ms": 1000 * statistics.median(walls), "cpu_ms": 1000 * statistics.median(cpus),
            "peak_kb": max(peaks) / 1024, "ingest_ms": 1000 * statistics.median(ingest_walls),
            "unchanged": unchanged, "problem": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"{'case':26} {'check ms':>9} {'cpu ms':>7} {'peak KB':>8} {'ingest ms':>10} {'data/ same':>10}  "
          "first problem")
    for name in sorted(CASES):
        r = _case(name, args.repeats)
        problem = r["problem"] if len(r["problem"]) < 110 else r["problem"][:109] + "…"
        print(f"{r['case']:26} {r['check_ms']:9.1f} {r['cpu_ms']:7.1f} {r['peak_kb']:8.0f} {r['ingest_ms']:10.1f} "
              f"{str(r['unchanged']):>10}  {problem}")
    for root in submission_dirs(SUBMISSIONS_DIR):
        t0 = time.perf_counter()
        (sub, problems), cpu, peak = measured(lambda root=root: check(root))
        print(f"shipped {root.name:18} {1000 * (time.perf_counter() - t0):9.1f} {1000 * cpu:7.1f} {peak / 1024:8.0f} "
              f"{'':>10} {'':>10}  {'ok' if sub else problems[0]}")


if __name__ == "__main__":
    main()
