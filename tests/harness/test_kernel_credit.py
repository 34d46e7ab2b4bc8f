"""Issue 40 §1: a kernel is credited at most the work that ran in it.

The runner's attribution (bench.harness.runner.executed) on a recorded HLO text and op events (no jax, no
clock), on a tiny real program (its own labels replace the candidate's, a real profile pass), and the parent's
bound (parent/outcome.py) on coverage details and measurements fed by hand.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench import hardware
from bench.harness.parent import outcome
from bench.harness.protocol.messages import UNBOUNDED, ExecutedReport, ExecutedWork
from bench.harness.runner import executed

#: A compiled candidate's HLO, as the runner reads it (`compiled.as_text()`), cut down: a site's dot in a loop body,
#: another site's fused slice and multiply, a fusion mixing a site and outside, a forged path naming two sites.
HLO = (Path(__file__).parent / "fixtures" / "executed_work.hlo").read_text()

DOT_FLOPS = 2.0 * 128 * 128 * 512
DOT_BYTES = 128 * 512 * 2 + 512 * 128 * 2 + 128 * 128 * 4
BLOCK = 128 * 128 * 4


def test_each_instruction_is_costed_for_its_own_site() -> None:
    costs = executed.instruction_costs(HLO)
    assert costs["ynn_fusion"].by_site == {"jaxbench_kernel_0": [DOT_FLOPS, 0.0, DOT_BYTES]}
    # a parameter read only through a dynamic slice counts the slice (the block), not the whole array
    assert costs["mul_fusion"].by_site == {"jaxbench_kernel_1": [0.0, 128.0 * 128, BLOCK + 4 + BLOCK]}
    # FLOPs go to each fused instruction's own site; bytes of a fusion that mixes sites go to none
    assert costs["mixed"].by_site == {
        "jaxbench_kernel_0": [0.0, 128.0 * 128, 0.0],
        executed.OUTSIDE: [0.0, 128.0 * 128, 0.0],
    }
    # an unfused computing op counts its operands and result
    assert costs["negate.1"].by_site == {"jaxbench_kernel_1": [0.0, 128.0 * 128, 2.0 * BLOCK]}
    # two site labels in one path attribute nothing; copies and scalar counters compute nothing
    assert {"spoof", "copy.1", "next"}.isdisjoint(costs)
    # an op labelled outside every site is the XLA side's work (measured too: the static reading guesses loops)
    assert costs["outside_add"].by_site == {executed.OUTSIDE: [0.0, 128.0 * 128, 3.0 * BLOCK]}


def test_executed_work_is_events_times_costs_least_over_runs() -> None:
    events: list[tuple[str, int | None, str]] = [("jit_candidate", 1, "ynn_fusion")] * 6
    events += [("jit_candidate", 2, "ynn_fusion")] * 5
    events += [("jit_candidate", run, "mul_fusion") for run in (1, 1, 2, 2)]
    events += [("jit_candidate", 1, "spoof"), ("jit_candidate", 1, "while.1"), ("jit_candidate", None, "mixed")]
    events += [("jit_baseline", 1, "ynn_fusion")] * 100  # another program's events never count
    events += [("jit_candidate", 1, "outside_add")] * 3 + [("jit_candidate", 2, "outside_add")]
    report = executed.measure(events, "jit_candidate", executed.instruction_costs(HLO))
    assert report.runs == 2
    assert report.sites == [
        ExecutedWork(site="jaxbench_kernel_0", matmul_flops=5 * DOT_FLOPS, other_flops=0.0, bytes=5 * DOT_BYTES),
        ExecutedWork(site="jaxbench_kernel_1", matmul_flops=0.0, other_flops=2 * 128.0**2, bytes=2 * (2 * BLOCK + 4)),
    ]
    # the XLA side: the most over the runs (run 1 ran its add 3 times), never a site of its own
    assert (report.outside_flops, report.outside_bytes) == (3 * 128.0**2, 3 * 3.0 * BLOCK)


def test_no_events_no_measurement() -> None:
    assert executed.measure([], "jit_candidate", executed.instruction_costs(HLO)) == ExecutedReport(runs=0, sites=[])


# ---------------------------------------------------------------- the parent's bound

PEAK_FLOPS, PEAK_BYTES = 918e12, 1640e9


def _coverage(sites: dict[str, list[float]], outside_s: float = 1e-6, static: float = 0.9) -> dict:
    spec = hardware.chip_spec("v6e")
    assert spec is not None and (spec.peak_bf16_tflops * 1e12, spec.hbm_gb_s * 1e9) == (PEAK_FLOPS, PEAK_BYTES)
    return {
        "coverage": static,
        "outside_s": outside_s,
        "target_chip": "v6e",
        "programs_match_outside_kernels": True,
        "sites": {k: dict(zip(("matmul_flops", "other_flops", "bytes"), v, strict=True)) for k, v in sites.items()},
    }


def test_each_site_is_credited_the_least_of_its_reading_and_what_ran() -> None:
    cov = _coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6], "jaxbench_kernel_1": [1e9, 0.0, 1e6], "k2": [1e9, 0, 1]})
    ran = ExecutedReport(
        runs=1,
        sites=[
            ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1e9, other_flops=0.0, bytes=4e6),  # ran less
            ExecutedWork(site="jaxbench_kernel_1", matmul_flops=5e12, other_flops=1e12, bytes=1e9),  # ran more
        ],
    )
    c = outcome.credit_bound(cov, 3, "cpu", ran)
    assert c is not None
    first = max(1e9 / PEAK_FLOPS, 1e6 / PEAK_BYTES)  # FLOPs that ran, bytes of the reading
    second = max(1e9 / PEAK_FLOPS, 1e6 / PEAK_BYTES)  # the reading: a site is never credited more
    sites = c.details["sites"]
    assert isinstance(sites, dict) and sites["k2"] == {"static": [1e9, 0.0, 1.0], "ran": [0.0] * 3, "credited_s": 0.0}
    assert c.coverage == round((first + second) / (first + second + 1e-6), 4)
    assert c.pallas_calls == 2 and c.details["source"] == outcome.CREDIT_MEASURED


def test_the_xla_side_counts_what_ran_where_that_is_more_than_its_reading() -> None:
    """Red team 4: a loop of unknown trips reads 1,024 trips statically; an XLA GEMM run as a data-dependent loop of
    many more trips looked cheap, leaving the cap room for kernel work the task does not need. What ran counts."""
    cov = {**_coverage({"jaxbench_kernel_0": [1e9, 0.0, 1e6]}, outside_s=1e-6), "baseline_s": 1.0}
    cov.update(baseline_flops=2e9, outside_flops=1e3)
    site = ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1e9, other_flops=0.0, bytes=1e6)
    kernel_s = max(1e9 / PEAK_FLOPS, 1e6 / PEAK_BYTES)
    quiet = outcome.credit_bound(cov, 1, "cpu", ExecutedReport(runs=1, sites=[site]))
    assert quiet is not None and quiet.coverage == round(kernel_s / (kernel_s + 1e-6), 4)
    busy = ExecutedReport(runs=1, sites=[site], outside_flops=1.9e9, outside_bytes=0.0)  # the GEMM, run in XLA
    loud = outcome.credit_bound(cov, 1, "cpu", busy)
    assert loud is not None and loud.details["outside_s"] == {"static": 1e-6, "ran": 1.9e9 / PEAK_FLOPS}
    # the XLA side's time is what ran, and the FLOP cap leaves the kernel 2 x (2e9 - 1.9e9) of its 1e9
    assert loud.details["task_flops_share"] == pytest.approx(0.2)
    assert loud.coverage == round(kernel_s * 0.2 / (kernel_s + 1.9e9 / PEAK_FLOPS), 4) < quiet.coverage / 4


def test_a_site_where_only_bookkeeping_ran_is_credited_nothing() -> None:
    cov = _coverage({"jaxbench_kernel_0": [1e12, 1e6, 1e6]})
    bookkeeping = ExecutedWork(site="jaxbench_kernel_0", matmul_flops=0, other_flops=0, bytes=1e6)
    ran = ExecutedReport(runs=1, sites=[bookkeeping])
    c = outcome.credit_bound(cov, 1, "cpu", ran)
    assert c is not None and (c.coverage, c.pallas_calls) == (0.0, 0)


@pytest.mark.parametrize("ran", [None, ExecutedReport(runs=0, sites=[])])
def test_the_cpu_track_without_a_measurement_credits_no_kernel(ran: ExecutedReport | None) -> None:
    c = outcome.credit_bound(_coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6]}), 1, "cpu", ran)
    assert c is not None and (c.coverage, c.pallas_calls, c.details["source"]) == (0.0, 0, outcome.CREDIT_UNMEASURED)


def test_a_report_without_site_readings_credits_no_kernel_on_cpu() -> None:
    cov = _coverage({})
    del cov["sites"]
    ran = ExecutedReport(runs=1, sites=[ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1, other_flops=0, bytes=1)])
    c = outcome.credit_bound(cov, 1, "cpu", ran)
    assert c is not None and c.coverage == 0.0


def test_a_tpu_runner_keeps_the_static_reading_and_says_so() -> None:
    c = outcome.credit_bound(_coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6]}, static=0.8), 1, "tpu", None)
    assert c is not None and (c.coverage, c.pallas_calls, c.details["source"]) == (0.8, 1, outcome.CREDIT_STATIC)
    assert outcome.credit_bound({"coverage": None}, 0, "cpu", None) is None  # no TPU program read: nothing to bound


def test_a_native_runner_credits_nothing_beside_an_unknown_xla_loop_and_caps_the_kernels_flops() -> None:
    """Red team 5: 100,000 data-dependent trips of a GEMM outside kernels read 1,024 trips, and a TPU runner measures
    nothing: no credit (the coverage is unknown, which counts 0 wherever coverage ranks). The FLOP cap applies on the
    static reading too: kernels doing 10x the task's FLOPs less the XLA side's are credited a fifth of their reading
    (FLOP_ROOM 2)."""
    loop = {**_coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6]}, static=0.8), "unknown_loops": 1}
    c = outcome.credit_bound(loop, 1, "tpu", None)
    assert c is not None and (c.coverage, c.details["source"]) == (None, outcome.CREDIT_UNKNOWN_XLA)
    flops = {"baseline_flops": 2e11, "outside_flops": 1e11, "kernel_flops": 1e12}
    capped = outcome.credit_bound({**_coverage({}, static=0.8), **flops}, 1, "tpu", None)
    assert capped is not None and capped.coverage == pytest.approx(0.8 * 2 * 1e11 / 1e12)


def test_a_native_runner_reads_undecided_kernel_work_below_the_label_as_unknown_not_mostly_xla() -> None:
    """The hand-tuned paged attention's loops run to page counts read from its inputs: its TPU program's reading
    counts them zero, which labelled an 8x kernel `mostly_xla` on a TPU v5e. Where some kernel work has no bound (or
    its undecided branches at their dearer side would lift it past the label), a native runner's coverage is unknown,
    with the part it could count; where even the dearest reading stays below the label, the label holds."""
    paged = {**_coverage({"jaxbench_kernel_0": [UNBOUNDED, 0.0, 1e6]}, static=0.0), "uncertain_kernels": 1}
    c = outcome.credit_bound(paged, 1, "tpu", None)
    assert c is not None and (c.coverage, c.pallas_calls) == (None, 1)
    assert (c.details["source"], c.details["at_least"]) == (outcome.CREDIT_UNDECIDED, 0.0)
    branch = {**_coverage({}, outside_s=1e-3, static=0.2), "kernel_s": 2.5e-4, "kernel_s_high": 4e-3}
    assert outcome.credit_bound(branch, 1, "tpu", None).coverage is None  # type: ignore[union-attr]
    dear_but_small = {**branch, "kernel_s_high": 5e-4}  # the dearer side: 0.33 of the work, still below 0.5
    assert outcome.credit_bound(dear_but_small, 1, "tpu", None).coverage == 0.2  # type: ignore[union-attr]
    decided = _coverage({"jaxbench_kernel_0": [1e9, 0.0, 1e6]}, static=0.1)  # nothing undecided: the label holds
    assert outcome.credit_bound(decided, 1, "tpu", None).coverage == 0.1  # type: ignore[union-attr]


# ---------------------------------------------------------------- a tiny real program


@pytest.mark.slow
def test_the_runners_labels_replace_the_candidates_and_the_profile_pass_counts_what_ran() -> None:
    """A candidate names its XLA matmul after a kernel site (jax.named_scope writes op_name); the runner's labels
    replace every location, so only the kernel's own matmul is attributed to the site; a real profile pass
    counts its executions (a 2x3 grid: 6 block matmuls)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from bench.harness.runner.program import Program
    from bench.harness.sandbox.lowering import export_jaxpr, trace, with_kernel_sites
    from bench.registry import spec

    def kernel(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    def workload(a, b):
        with jax.named_scope("jaxbench_site:jaxbench_kernel_0"):
            decoy = jnp.dot(a, b)  # XLA work the candidate labels as the kernel's
        out = pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype),
            grid=(2, 3),
            in_specs=[pl.BlockSpec((128, 512), lambda i, j: (i, 0)), pl.BlockSpec((512, 128), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(a, b)
        return out + decoy * 0

    signature = spec("8p_GEMM").signature("small")
    closed = trace(workload, "candidate", signature)
    blob = bytes(export_jaxpr(with_kernel_sites(closed, interpret=True), "candidate", ["cpu"]).serialize())
    unlabelled = executed.instruction_costs(Program("candidate", blob, signature).compiled.as_text() or "")
    spoofed = sum(c.by_site.get("jaxbench_kernel_0", [0.0])[0] for c in unlabelled.values())
    assert spoofed == 2.0 * 256 * 512 * 384  # read with the build's locations, the decoy would be the site's work

    program = Program("candidate", blob, signature, relabel=True)
    args = [jnp.ones(a.shape, a.dtype) for a in signature.arrays]
    jax.block_until_ready(program.compiled(*args))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory() as logdir:
        jax.profiler.start_trace(logdir, profiler_options=options)
        for _ in range(2):
            jax.block_until_ready(program.compiled(*args))
        jax.profiler.stop_trace()
        xspace = sorted(Path(logdir).rglob("*.xplane.pb"))[-1].read_bytes()
    costs = executed.instruction_costs(program.compiled.as_text() or "")
    report = executed.measure(executed.trace_events(xspace), program.module, costs)
    assert report.runs == 2
    (site,) = report.sites
    assert site.site == "jaxbench_kernel_0" and site.matmul_flops == 2.0 * 256 * 512 * 384


def test_a_data_dependent_kernel_is_credited_what_ran_capped_like_the_static_reading() -> None:
    """No allowance for kernels whose work depends on data (the static reading's exact semantics removed it): the
    credit is what ran, at most the baseline's work the XLA side does not do; nothing ran, nothing credited."""
    cov = {**_coverage({"jaxbench_kernel_0": [1e9, 0.0, 1e6]}, outside_s=1e-6), "uncertain_kernels": 1}
    cov["baseline_s"] = 5e-6
    ran = ExecutedReport(
        runs=1, sites=[ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1e9, other_flops=0, bytes=1e6)]
    )
    c = outcome.credit_bound(cov, 1, "cpu", ran)
    assert c is not None
    site = c.details["sites"]["jaxbench_kernel_0"]  # type: ignore[call-overload,index]
    seconds = float(site["credited_s"])  # type: ignore[call-overload,index,arg-type]
    assert 0 < seconds < 4e-6 and c.coverage == round(seconds / (seconds + 1e-6), 4)
    cov["baseline_s"] = 1.5e-6  # the task's work leaves 0.5e-6 to the kernel
    c = outcome.credit_bound(cov, 1, "cpu", ran)
    assert c is not None and c.coverage == round(0.5e-6 / (seconds + 1e-6), 4)
    nothing = ExecutedReport(runs=1, sites=[])
    c = outcome.credit_bound(cov, 1, "cpu", nothing)
    assert c is not None and (c.coverage, c.pallas_calls) == (0.0, 0)


@pytest.mark.parametrize(
    "backend, traced, trace, relabelled",
    [("tpu", True, b"x", True), ("cpu", True, b"x", True), ("cpu", False, None, True), ("cpu", False, b"x", False)],
)
def test_the_runner_measures_only_an_interpreted_labelled_program_it_profiled(
    backend: str, traced: bool, trace: bytes | None, relabelled: bool
) -> None:
    """No measurement (so no kernel credited on CPU) on an accelerator, when the blocks themselves were traced,
    without a profile pass, or for a program the runner could not label."""
    from types import SimpleNamespace

    from bench.harness.runner import server

    state = SimpleNamespace(env=SimpleNamespace(backend=backend))
    candidate = SimpleNamespace(relabelled=relabelled, compiled=None, module="jit_candidate")
    assert server._executed(state, candidate, trace, traced) is None  # type: ignore[arg-type]


def test_no_credit_where_the_programs_differ_outside_their_kernels() -> None:
    """The credit is weighed against the TPU program's XLA work: where the runnable program does other XLA work (red
    team 3: an XLA answer plus zero times a kernel that ran), what ran in its kernels is credited nothing."""
    cov = _coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6]})
    ran = ExecutedReport(
        runs=1, sites=[ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1e12, other_flops=0.0, bytes=1e6)]
    )
    assert outcome.credit_bound(cov, 1, "cpu", ran).coverage > 0.5  # type: ignore[union-attr]
    for match in (False, None):
        c = outcome.credit_bound({**cov, "programs_match_outside_kernels": match}, 1, "cpu", ran)
        assert c is not None and c.coverage == 0.0 and c.details["source"] == outcome.CREDIT_UNMATCHED


def test_the_credit_is_capped_by_the_task_s_flops_less_the_xla_side_s() -> None:
    """Only the part of the kernels' time the task's FLOPs leave room for is credited; all of it counts as time."""
    cov = {**_coverage({"jaxbench_kernel_0": [1e12, 0.0, 1e6]}, outside_s=1e-6), "baseline_s": 1.0}
    ran = ExecutedReport(
        runs=1, sites=[ExecutedWork(site="jaxbench_kernel_0", matmul_flops=1e12, other_flops=0.0, bytes=1e6)]
    )
    seconds = 1e12 / PEAK_FLOPS
    full = outcome.credit_bound(cov, 1, "cpu", ran)
    assert full is not None and full.coverage == round(seconds / (seconds + 1e-6), 4)
    room = outcome.FLOP_ROOM
    for base, outside, share in ((1e12, 0.0, 1.0), (1e12, 0.8e12, 0.2 * room), (1e12, 1e12, 0.0), (1e12, 2e12, 0.0)):
        c = outcome.credit_bound({**cov, "baseline_flops": base, "outside_flops": outside}, 1, "cpu", ran)
        assert c is not None and c.details["task_flops_share"] == pytest.approx(share)
        assert c.coverage == min(full.coverage, round(seconds * share / (seconds + 1e-6), 4))


def test_what_ran_counts_every_window_of_a_reduce_window_and_its_combiner() -> None:
    """XLA:CPU combines every element of every window (out x w); counting the operand's elements let a 512-wide
    window with a two-op combiner read 1/1024 of what ran outside kernels."""
    import jax
    import jax.numpy as jnp

    x = jax.ShapeDtypeStruct((64, 4096), jnp.float32)

    def ran(fn) -> float:
        costs = executed.instruction_costs(jax.jit(fn).lower(x).compile().as_text() or "")
        return sum(c.by_site.get(executed.OUTSIDE, [0.0, 0.0, 0.0])[1] for c in costs.values())

    pad = ((0, 0), (511, 0))
    assert ran(lambda v: jax.lax.reduce_window(v, 0.0, lambda a, b: a * 0.5 + b, (1, 512), (1, 1), pad)) == (
        64 * 4096 * 512 * 2
    )
    assert ran(lambda v: jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 512), (1, 1), pad)) == 64 * 4096 * 512
    assert ran(lambda v: jnp.sum(v, axis=-1)) == 64 * 4096
