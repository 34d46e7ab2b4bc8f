"""submissions/xla-baseline/ is what the generator makes of the current workload modules (no drift)."""

from bench.dataset.baseline_submission import BASELINE_ID, baseline_source
from bench.paths import SUBMISSIONS_DIR
from bench.registry import workload_ids


def test_baseline_kernels_are_regenerated_and_import_nothing_of_ours():
    kdir = SUBMISSIONS_DIR / BASELINE_ID / "kernels"
    assert sorted(p.stem for p in kdir.glob("*.py")) == sorted(workload_ids())
    for wid in workload_ids():
        text = (kdir / f"{wid}.py").read_text()
        assert text == baseline_source(wid), f"{wid}: run `python -m bench.dataset.baseline_submission`"
        assert "workloads" not in "".join(line for line in text.splitlines() if line.startswith(("import", "from")))
