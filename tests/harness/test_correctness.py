"""The correctness gate judges an output a chunk at a time (bounded temporaries at the full size): its verdict and
every measured figure must be the ones a single pass over the whole array gives."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from bench.harness.protocol import correctness
from bench.harness.protocol.correctness import Tolerance, compare


def _pair(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((5, 13)).astype(ml_dtypes.bfloat16)
    noisy = ref.astype(np.float32) + rng.standard_normal(ref.shape).astype(np.float32) * 0.004
    out = noisy.astype(ml_dtypes.bfloat16)
    if kind == "outliers":  # two equal worst elements in different chunks: the first is reported
        ref.reshape(-1)[[9, 40]] = 1.0
        out.reshape(-1)[[9, 40]] = 5.0
    if kind == "zeros":
        out = np.zeros_like(ref)
    if kind == "nan":
        out.reshape(-1)[[30, 50]] = np.nan
    if kind == "reference_inf":  # a chunk with a masked element beside chunks without
        ref.reshape(-1)[[20, 21]] = np.inf
    return ref, out


@pytest.mark.parametrize("judges", [1, 4])
@pytest.mark.parametrize("kind", ["close", "outliers", "zeros", "nan", "reference_inf"])
def test_the_verdict_and_figures_do_not_depend_on_the_chunk(
    kind: str, judges: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks judged in one thread or several, folded in order: the verdict and figures of one whole pass."""
    ref, out = _pair(kind)
    tol = Tolerance(atol=0.02, rtol=0.02, rel_l2=0.05)
    whole = compare(ref, out, tol).model_dump()
    monkeypatch.setattr(correctness, "_CHUNK", 7)
    monkeypatch.setattr(correctness, "_MAX_JUDGES", judges)
    monkeypatch.setattr(correctness, "_cores", lambda: 4)
    chunked = compare(ref, out, tol).model_dump()
    assert repr(compare(ref, out, tol, threads=1).model_dump()) == repr(chunked)  # a caller's share of the cores
    rel_whole, rel_chunked = whole.pop("rel_l2_err"), chunked.pop("rel_l2_err")
    assert rel_chunked == (None if rel_whole is None else pytest.approx(rel_whole, rel=1e-12))
    assert repr(whole) == repr(chunked)  # NaN figures compare as text
    assert chunked["correct"] is (kind in ("close", "reference_inf"))
    if kind == "outliers":
        assert chunked["worst_index"] == [0, 9]
    if kind == "nan":
        assert "2 non-finite" in chunked["reason"] and chunked["worst_index"] == [2, 4]


def test_the_relative_error_leaves_out_non_finite_reference_elements() -> None:
    """max |ref - out| / |ref| over the finite reference elements above atol: 0.004 / 1 here, whatever the NaN."""
    ref = np.array([np.nan, 1.0, 2.0], np.float32)
    out = np.array([0.0, 1.004, 2.0], np.float32)
    verdict = compare(ref, out, Tolerance(atol=0.01, rtol=0.01))
    assert verdict.correct and verdict.max_rel_err == pytest.approx(0.004, rel=1e-4)


def test_a_non_finite_reference_element_is_never_the_worst() -> None:
    ref = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    out = np.array([1.0, 5.0, 7.0, 2.5], np.float32)
    verdict = compare(ref, out, Tolerance(atol=0.01, rtol=0.01))
    assert not verdict.correct and verdict.worst_index == [3] and verdict.worst_out == 2.5


def test_empty_outputs_match() -> None:
    empty = np.zeros((0, 4), np.float32)
    assert compare(empty, empty.copy()).correct


def test_the_reference_norm_is_measured_over_finite_elements_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.array([3.0, np.inf, 4.0, np.nan] * 5, np.float32)
    monkeypatch.setattr(correctness, "_CHUNK", 3)
    assert correctness.finite_norm(x) == pytest.approx(np.sqrt(5 * 25.0))


def test_a_caller_s_thread_share_bounds_the_judging_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The certificate judges several outputs side by side and gives each its share of the cores: one thread
    means no pool at all, and the count asked for is the pool's size."""
    ref, out = _pair("close")
    sizes: list[int] = []

    class Pool(correctness.ThreadPoolExecutor):
        def __init__(self, workers: int) -> None:
            sizes.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(correctness, "_CHUNK", 7)
    monkeypatch.setattr(correctness, "_cores", lambda: 8)
    monkeypatch.setattr(correctness, "ThreadPoolExecutor", Pool)
    tol = Tolerance(atol=0.02, rtol=0.02, rel_l2=0.05)
    assert compare(ref, out, tol, threads=1).correct and sizes == []
    assert compare(ref, out, tol, threads=3).correct and sizes == [3]
    assert compare(ref, out, tol).correct and sizes == [3, 8]
