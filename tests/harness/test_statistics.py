"""The speedup interval and the timing-quality classification on KNOWN distributions (simulated blocks, fixed
seeds: deterministic; no wall time is measured here)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.harness.parent import timing as st


def _blocks(
    rng: np.random.Generator,
    ratio: float,
    n_blocks: int = 10,
    calls: int | list[int] = 5,
    noise: float = 0.05,
    block_sd: float = 0.05,
    base_ms: float = 1.0,
) -> list[st.Block]:
    """Simulated ABBA blocks: a block-wide slowdown shared by both programs (the machine's phase), plus
    independent lognormal noise per call; the kernel's true time is base_ms / ratio."""
    lengths = calls if isinstance(calls, list) else [calls] * n_blocks
    out = []
    for n in lengths:
        phase = np.exp(rng.normal(0, block_sd))
        b = base_ms * phase * np.exp(rng.normal(0, noise, n))
        k = base_ms / ratio * phase * np.exp(rng.normal(0, noise, n))
        out.append(st.Block(tuple(b), tuple(k)))
    return out


def _coverage(
    ratio: float, trials: int, systematic_sd: float = st.SYSTEMATIC_SD, **kw
) -> tuple[float, list[tuple[float, float]]]:
    rng = np.random.default_rng(1234)
    intervals = [
        st.speedup_interval(_blocks(rng, ratio, **kw), resamples=1000, systematic_sd=systematic_sd)
        for _ in range(trials)
    ]
    return float(np.mean([lo <= ratio <= hi for lo, hi in intervals])), intervals


def test_pooled_median_of_resamples_equals_numpy_median_of_the_concatenated_calls():
    rng = np.random.default_rng(0)
    per_block = [rng.lognormal(0, 0.3, n) for n in (1, 4, 7, 2, 5, 3)]  # variable lengths, odd and even totals
    pooled = st._PooledMedian(per_block)
    counts = rng.multinomial(6, [1 / 6] * 6, size=200)
    got = pooled(counts)
    want = [np.median(np.concatenate([per_block[i] for i in range(6) for _ in range(c[i])])) for c in counts]
    np.testing.assert_allclose(got, want)


def test_identical_programs_interval_contains_one_about_95_percent_of_the_time():
    # no systematic term: the block bootstrap alone, with the small-sample expansion, is ~95 %
    cov, _ = _coverage(1.0, 200, systematic_sd=0.0)
    assert 0.92 <= cov <= 0.99
    # the default adds the between-run term: more conservative, never less
    cov_default, _ = _coverage(1.0, 200)
    assert cov_default >= cov


def test_without_the_small_sample_expansion_ten_blocks_cover_less():
    # why expanded_confidence exists: the plain 95 % percentile interval of 10 blocks misses more often
    rng = np.random.default_rng(1)
    plain = expanded = 0
    for _ in range(200):
        blocks = _blocks(rng, 1.0, noise=0.15)
        lo, hi = st.speedup_interval(blocks, confidence=0.95, resamples=1000, systematic_sd=0.0)
        expanded += lo <= 1.0 <= hi
        lo, hi = _plain_percentile(blocks, 0.95)
        plain += lo <= 1.0 <= hi
    assert plain < expanded and plain / 200 < 0.95 <= expanded / 200


def _plain_percentile(blocks: list[st.Block], level: float) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    n = len(blocks)
    base = st._PooledMedian([b.baseline_ms for b in blocks])
    kern = st._PooledMedian([b.kernel_ms for b in blocks])
    counts = rng.multinomial(n, [1 / n] * n, size=1000)
    r = base(counts) / kern(counts)
    return tuple(np.quantile(r, [(1 - level) / 2, (1 + level) / 2]))


def test_a_real_twofold_speedup_is_covered_and_separated_from_one():
    cov, intervals = _coverage(2.0, 100)
    assert cov >= 0.92
    assert all(lo > 1.5 for lo, _ in intervals)


def test_twice_the_work_lies_below_075_at_quiet_noise():
    _, intervals = _coverage(0.5, 50, noise=0.03, block_sd=0.03)
    assert all(hi < 0.75 for _, hi in intervals)


def test_width_follows_the_noise_and_the_number_of_blocks():
    def median_width(**kw):
        _, intervals = _coverage(1.0, 40, **kw)
        return float(np.median([hi - lo for lo, hi in intervals]))

    quiet, loud = median_width(noise=0.02), median_width(noise=0.2)
    assert quiet < 0.15 < loud
    assert median_width(noise=0.1, n_blocks=40) < median_width(noise=0.1, n_blocks=6)


def test_variable_length_blocks_and_the_estimate_is_inside():
    rng = np.random.default_rng(3)
    blocks = _blocks(rng, 1.3, calls=[1, 9, 3, 6, 2, 8, 4, 5, 7, 5])
    lo, hi = st.speedup_interval(blocks)
    assert lo <= st.pooled_speedup(blocks) <= hi
    assert lo < 1.3 < hi


def test_deterministic_given_the_seed():
    blocks = _blocks(np.random.default_rng(5), 1.0)
    assert st.speedup_interval(blocks, seed=11) == st.speedup_interval(blocks, seed=11)
    assert st.speedup_interval(blocks, seed=11) != st.speedup_interval(blocks, seed=12)


def test_fewer_than_two_usable_blocks_give_no_interval():
    one = _blocks(np.random.default_rng(0), 1.0, n_blocks=1)
    assert st.speedup_interval(one) is None
    assert st.speedup_interval(one + [st.Block((1.0,), ())]) is None  # a block without kernel calls does not count


def test_systematic_term_widens_both_sides_in_log_space():
    blocks = _blocks(np.random.default_rng(9), 1.0)
    lo0, hi0 = st.speedup_interval(blocks, systematic_sd=0.0)
    lo1, hi1 = st.speedup_interval(blocks, systematic_sd=0.05)
    assert lo1 < lo0 and hi1 > hi0
    # an exact-zero-spread run still gets the between-run width: +-1.96 sd on the log scale
    flat = [st.Block((2.0,) * 3, (1.0,) * 3) for _ in range(5)]
    lo, hi = st.speedup_interval(flat, systematic_sd=0.05)
    assert lo == pytest.approx(2 * np.exp(-1.96 * 0.05), rel=1e-3)
    assert hi == pytest.approx(2 * np.exp(1.96 * 0.05), rel=1e-3)


def test_blocks_from_segments_pairs_by_block_index_whatever_the_lengths():
    times = {"b": [1, 2, 3, 4, 5], "k": [6, 7, 8], "p": [9, 9]}
    segments = [(0, "b", 2), (0, "k", 1), (0, "p", 1), (1, "p", 1), (1, "k", 2), (1, "b", 3)]  # ABBA order
    assert st.blocks_from_segments(times, segments, "b", "k") == [st.Block((1, 2), (6,)), st.Block((3, 4, 5), (7, 8))]
    # the split of every program's calls, made once by the caller (outcome: block_ms too), pairs the same
    per = st.per_block(times, segments)
    assert st.blocks_from_segments(times, segments, "b", "k", per) == st.blocks_from_segments(times, segments, "b", "k")
    # a block with only one of the two programs is left out
    assert st.blocks_from_segments({"b": [1, 2], "k": [3]}, [(0, "b", 1), (0, "k", 1), (1, "b", 1)], "b", "k") == [
        st.Block((1,), (3,))
    ]
    with pytest.raises(ValueError):  # the segments must account for every call
        st.blocks_from_segments({"b": [1, 2, 3], "k": [1]}, [(0, "b", 2), (0, "k", 1)], "b", "k")


def test_summarize_adds_up_every_segment():
    from bench.harness.protocol.messages import InterferenceRecord, Segment

    def seg(block: int, program: str, delay: float | None) -> Segment:
        return Segment(
            block=block,
            program=program,
            calls=5,
            wall_s=0.5,
            cpu_s=0.4,
            run_delay_s=delay,
            involuntary_switches=3,
        )

    record = InterferenceRecord(
        segments=[seg(0, "b", 0.1), seg(0, "k", 0.05)], loadavg_before=0.5, loadavg_after=1.5, cores=2
    )
    m = st.summarize(record)
    assert (m.wall_s, m.cpu_s, m.involuntary_switches, m.cores) == (1.0, 0.8, 6, 2)
    assert m.run_delay_s == pytest.approx(0.15) and (m.loadavg_before, m.loadavg_after) == (0.5, 1.5)
    no_schedstat = record.model_copy(update={"segments": [seg(0, "b", None), seg(0, "k", 0.05)]})
    assert st.summarize(no_schedstat).run_delay_s is None
    assert m.others_runnable is None  # segments without the count (no /proc/loadavg)
    counted = record.model_copy(
        update={
            "segments": [
                s.model_copy(update={"others_runnable": n}) for s, n in zip(record.segments, (1, 2), strict=True)
            ]
        }
    )
    assert st.summarize(counted).others_runnable == 1.5


def test_frequent_short_preemptions_that_cost_no_time_are_not_interference():
    """Ray's daemon threads on a one-core node: ~150 wakeups a second, 2 % of the wall time (measured)."""
    assert st.interference_reasons(_interference(involuntary_switches=120, run_delay_s=0.02)) == []
    assert st.interference_reasons(_interference(involuntary_switches=120))  # no run delay known: the count


def test_the_load_our_own_finished_builds_left_is_not_interference():
    """The 1-minute load average still counts an evaluation's own builds after they ended (it read 2.03 on 2
    cores in benchmark loops of a quiet host); what competes while the runner times is who is runnable then."""
    quiet_now = _interference(loadavg_after=2.4, others_runnable=0.3)
    assert st.interference_reasons(quiet_now) == []
    busy_now = _interference(loadavg_after=1.2, others_runnable=2.0)
    assert "2.0 other runnable threads" in st.interference_reasons(busy_now)[0]


def test_expanded_confidence_is_wider_and_approaches_the_nominal_level():
    assert st.expanded_confidence(0.95, 10) > 0.98
    assert st.expanded_confidence(0.95, 10) > st.expanded_confidence(0.95, 100) > 0.95
    assert st.expanded_confidence(0.95, 100000) == pytest.approx(0.95, abs=1e-3)


def test_bimodal_finds_two_levels_and_ignores_one_spread_level_and_one_outlier():
    rng = np.random.default_rng(2)
    two_levels = list(1.7 * np.exp(rng.normal(0, 0.03, 6))) + list(3.3 * np.exp(rng.normal(0, 0.03, 4)))
    found = st.bimodal(two_levels)
    assert found is not None and "6 blocks" in found and "4 blocks" in found
    assert st.bimodal([1.0] * 9 + [3.0]) is None  # one slow block: an outlier
    false_alarms = sum(st.bimodal(list(np.exp(rng.normal(0, 0.05, 10)))) is not None for _ in range(500))
    assert false_alarms / 500 < 0.05


def _interference(**kw) -> st.Interference:
    base = dict(wall_s=1.0, cpu_s=0.99, involuntary_switches=3, loadavg_before=0.5, loadavg_after=0.6, cores=2)
    return st.Interference(**{**base, **kw})


def test_classify_ok_on_a_quiet_run():
    blocks = _blocks(np.random.default_rng(4), 1.0, noise=0.02, block_sd=0.02)
    est, iv = st.pooled_speedup(blocks), st.speedup_interval(blocks)
    assert st.classify(est, iv, blocks, _interference()) == st.TimingQuality("ok", None)


@pytest.mark.parametrize(
    "change, words",
    [
        (dict(cpu_s=0.6), "ran 60% of the timed wall time"),
        (dict(involuntary_switches=400), "400 involuntary context switches"),  # no run delay known: the count
        (dict(involuntary_switches=400, run_delay_s=0.08), "waited 8% of the timed wall time for its core"),
        (dict(loadavg_after=3.5), "load average 3.50 on 2 cores"),  # no count of runnable threads: the load average
        (dict(others_runnable=2.4, loadavg_after=3.5), "2.4 other runnable threads on 2 cores while timing"),
    ],
)
def test_classify_names_the_interference(change, words):
    blocks = _blocks(np.random.default_rng(4), 1.0, noise=0.02, block_sd=0.02)
    q = st.classify(st.pooled_speedup(blocks), st.speedup_interval(blocks), blocks, _interference(**change))
    assert q.quality == "noisy" and words in q.reason


def test_classify_names_a_wide_interval_bimodal_blocks_and_a_missing_interval():
    rng = np.random.default_rng(6)
    loud = _blocks(rng, 1.0, noise=0.3)
    q = st.classify(st.pooled_speedup(loud), st.speedup_interval(loud), loud, None)
    assert q.quality == "noisy" and "wide interval" in q.reason
    levels = [st.Block((1.0,) * 3, (1.0,) * 3)] * 5 + [st.Block((2.0,) * 3, (2.0,) * 3)] * 5  # both shift together
    q = st.classify(1.0, st.speedup_interval(levels), levels, None)
    assert q.quality == "noisy" and "bimodal blocks: the baseline's" in q.reason and "kernel's" in q.reason
    q = st.classify(1.0, None, levels[:1], None)
    assert q.quality == "noisy" and "no interval" in q.reason


@pytest.mark.parametrize("p", [0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 0.025, 0.6])
def test_the_t_quantile_is_scipys_stdtrit(p: float) -> None:
    from scipy.special import stdtrit

    for dof in [*range(1, 301), 1000]:
        assert st._t_quantile(p, dof) == pytest.approx(float(stdtrit(dof, p)), rel=1e-9), dof


def test_the_parent_computes_its_intervals_without_scipy() -> None:
    """scipy.special's import is 0.4-0.5 s of a core in a one-off: the t quantile is computed without it."""
    import subprocess
    import sys

    code = "import sys; from bench.harness.parent import timing; timing.warm(); print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr[-2000:]
