"""One small synthetic dataset (plus the paper's reported tables and a hostile submission name), one strict
build of the site served from 127.0.0.1, shared by every test in this folder (the build is the slow part)."""

from __future__ import annotations

import datetime as dt
import functools
import http.server
import importlib.util
import shutil
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.dataset import reported, schema, store, synthetic
from bench.dataset.ingest import ingest
from bench.paths import DATA_DIR
from bench.site.build import BuildReport, build_site

XSS_NAME = "<script>alert(1)</script>"
XSS_METHOD = "<img src=x onerror=alert(2)>"
XSS_SUBMISSION = "synthetic-002"
#: A submission folder with one kernel in kernels/ and a helper module beside it (the helper gets no page).
KERNEL_SUBMISSION, KERNEL_WORKLOAD, HELPER_MODULE = "synthetic-003", "8p_GEMM", "epilogues"
TWIN_SUBMISSION, TWIN_OF = "synthetic-twin", "synthetic-005"  # identical results: a tie, ranked "=N" everywhere
HISTORY_SUBMISSION, HISTORY_WORKLOAD = "synthetic-004", "1p_Flash_Attention"  # also has an older evaluation
OLD_HARNESS = "7"  # ... under this harness version
TRAJ_SUBMISSION = "traj-v2"  # a v2 trajectory, every sample measured (tests/site/test_trajectory_site.py)
LIAR_SUBMISSION = "traj-liar"  # declares `correct, 2.0x` for a sample measured far slower than XLA
TESTS = Path(__file__).resolve().parents[1]


@dataclass
class BuiltSite:
    data_dir: Path
    build_dir: Path
    site_dir: Path
    url: str
    report: BuildReport
    xss_name: str = XSS_NAME
    xss_method: str = XSS_METHOD
    xss_submission: str = XSS_SUBMISSION
    twin: str = TWIN_SUBMISSION
    twin_of: str = TWIN_OF
    kernel_submission: str = KERNEL_SUBMISSION
    kernel_workload: str = KERNEL_WORKLOAD
    helper_module: str = HELPER_MODULE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_dataset(data_dir: Path) -> None:
    """Synthetic measured track (6 submissions x 8 workloads x 12 samples), the paper's tables, one XSS name,
    and the baseline's rows labelled no_pallas as in the real data."""
    (data_dir / "reported").mkdir(parents=True)
    for csv in (DATA_DIR / "reported").glob("*.csv"):
        shutil.copy2(csv, data_dir / "reported" / csv.name)
    reported.build(data_dir)
    synthetic.generate(data_dir, n_submissions=6, n_workloads=8, n_samples=12)
    # Like the real XLA baseline: every row labelled no_pallas (a label, not an excluding flag).
    base = data_dir / "results" / "cpu" / "small" / "xla-baseline" / "batch.parquet"
    table = pq.read_table(base)
    flags = pa.array([["no_pallas"]] * table.num_rows, schema.RESULTS.field("flags").type)
    store.write_atomic(table.set_column(table.schema.get_field_index("flags"), "flags", flags), base)
    path = store.submission_meta_path(data_dir, XSS_SUBMISSION)
    rows = pq.read_table(path).to_pylist()
    rows[0].update(name=XSS_NAME, method=XSS_METHOD)
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.SUBMISSIONS), path)
    add_twin_and_history(data_dir)
    ingest_trajectories(data_dir, data_dir.parent / "submissions")


def add_twin_and_history(data_dir: Path) -> None:
    """A submission with exactly TWIN_OF's results (equal ranking keys: a shared rank), and an evaluation of
    HISTORY_SUBMISSION older than its current one, under another harness version (history is kept)."""
    folder = data_dir / "results" / "cpu" / "small"
    twin = pq.read_table(folder / TWIN_OF / "batch.parquet").to_pylist()
    for r in twin:
        r.update(submission=TWIN_SUBMISSION, content_hash=f"synthetic-{TWIN_SUBMISSION}-{r['workload']}")
    store.write_atomic(pa.Table.from_pylist(twin, schema=schema.RESULTS), folder / TWIN_SUBMISSION / "batch.parquet")
    meta = pq.read_table(store.submission_meta_path(data_dir, TWIN_OF)).to_pylist()
    meta[0].update(submission=TWIN_SUBMISSION, name="Synthetic Twin")
    store.write_atomic(
        pa.Table.from_pylist(meta, schema=schema.SUBMISSIONS), store.submission_meta_path(data_dir, TWIN_SUBMISSION)
    )
    (row,) = [
        r
        for r in pq.read_table(folder / HISTORY_SUBMISSION / "batch.parquet").to_pylist()
        if r["workload"] == HISTORY_WORKLOAD
    ]
    row.update(
        harness_version=OLD_HARNESS,
        evaluated_at=row["evaluated_at"] - dt.timedelta(days=30),
        status="incorrect",
        correct=False,
        speedup=None,
        kernel_ms=None,
        tpu_lowering=None,
    )
    store.append_result(data_dir, row)


def ingest_trajectories(data_dir: Path, subs: Path) -> None:
    """Two v2 trajectories of real kernel sources (tests/dataset/trajectory_fixture.py), ingested with the fast
    fake evaluator: an honest one and the dishonest one (declared `correct, 2.0x`, measured far slower)."""
    spec = importlib.util.spec_from_file_location("trajectory_fixture", TESTS / "dataset" / "trajectory_fixture.py")
    fx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fx)
    fx.write(subs, TRAJ_SUBMISSION)
    fx.write(subs, LIAR_SUBMISSION, dishonest=True, gemm=False)
    report = ingest(
        data_dir=data_dir,
        submissions_dir=subs,
        chip="cpu",
        size="small",
        workers=1,
        evaluator=f"{TESTS / 'dataset' / 'fake_evaluator.py'}:evaluate",
    )
    assert not report.failed and not report.invalid and len(report.samples) == 3, report


def make_submissions(root: Path) -> Path:
    """submissions/<id>/kernels/<workload>.py plus a helper module at the submission's top level."""
    sub = root / KERNEL_SUBMISSION
    (sub / "kernels").mkdir(parents=True)
    (sub / "kernels" / f"{KERNEL_WORKLOAD}.py").write_text("def workload(A, B):\n    return A @ B\n")
    (sub / f"{HELPER_MODULE}.py").write_text("def helper():\n    return 0\n")
    return root


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium():
    """Debian chromium driven by playwright, one browser for the session's browser tests (skipped where
    scripts/setup --test has not installed it)."""
    path = shutil.which("chromium") or CHROMIUM
    if not Path(path).exists():
        pytest.skip("Debian chromium missing: scripts/setup --test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    root = tmp_path_factory.mktemp("site")
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    make_dataset(root / "data")
    report = build_site(
        data_dir=root / "data",
        site_dir=root / "site",
        build_dir=root / "build",
        site_url=url,
        submissions_dir=make_submissions(root / "submissions"),
    )
    return BuiltSite(root / "data", root / "build", root / "site", url, report)


@pytest.fixture(scope="session")
def served_site(built_site: BuiltSite):
    """The built site over HTTP on 127.0.0.1 at the port its site_url names (instant navigation needs that)."""
    port = int(built_site.url.rstrip("/").rsplit(":", 1)[1])
    handler = functools.partial(_QuietHandler, directory=str(built_site.site_dir))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield built_site
    finally:
        httpd.shutdown()
        httpd.server_close()
