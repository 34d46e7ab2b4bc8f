"""Adversarial suite: every attack kernel in kernels/ is caught by the real pipeline, the honest ones pass clean.

"Caught" means the row cannot reach the ranking with what it tried to win: a status other than correct, or
an excluding flag (bench.integrity.flags), or, for the no-Pallas rewrite, the `no_pallas` label. Each case
also names the signals its defense must produce, so a defense that silently stops working fails its own
test. Since harness v7 most v6 attacks fail structurally (the candidate's Python runs only in the build
step, on abstract inputs): host callbacks are refused, patches land in a process that is gone, and the
static tripwires still mark every attempt for a maintainer.

All kernels are evaluated once per session as ONE batch through one warm runner (bench.harness.parent.evaluate), on
8p_GEMM at small size with 2 seeds and a handful of timed iterations.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.integrity.flags import LABEL_FLAGS, MOSTLY_XLA, NO_PALLAS, excluding
from bench.paths import DATA_DIR

KERNELS = Path(__file__).parent / "kernels"
WORKLOAD = "8p_GEMM"
pytestmark = pytest.mark.slow

# kernel file stem -> (allowed statuses, flags that must all be present)
ATTACKS: dict[str, tuple[set[Status], set[str]]] = {
    # v6 attacks
    "attack_output_cache": ({Status.COMPILE_ERROR}, {"static:host_callback", "static:mutable_state"}),
    "attack_precompute_import": ({Status.INCORRECT}, {"static:workload_import"}),
    "attack_frame_reference": ({Status.INCORRECT}, {"static:frame_inspection"}),
    "attack_timer_patch": ({Status.CORRECT}, {"static:timer_patch"}),  # the timer lives in the runner
    "attack_harness_patch": ({Status.INCORRECT}, {"static:harness_import", "static:monkeypatch"}),
    "attack_trace_count": ({Status.CORRECT}, {"static:mutable_state"}),  # the one export is what runs
    "attack_input_mutation": ({Status.COMPILE_ERROR}, {"static:native_memory", "static:introspection"}),
    "attack_host_compute": ({Status.COMPILE_ERROR}, {"static:host_callback"}),
    "attack_lazy_output": ({Status.COMPILE_ERROR}, set()),
    "attack_jax_config": ({Status.CORRECT}, {"static:jax_config"}),  # changes the build's config only
    "attack_fake_profiler": ({Status.COMPILE_ERROR}, {"static:introspection"}),  # no worker to rewire
    "attack_exit_early": ({Status.CRASHED}, {"static:exit"}),
    "attack_no_pallas": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_thread": ({Status.CORRECT}, {"static:threads"}),
    "attack_background_process": ({Status.CORRECT}, {"static:subprocess"}),
    "attack_file_reference": ({Status.CORRECT}, {"static:file_access"}),
    # v7: one per weakness class of issue #12
    "attack_forged_status": ({Status.CRASHED}, {"static:exit"}),
    "attack_swap_outputs": ({Status.INCORRECT}, {"static:harness_import", "static:monkeypatch"}),
    "attack_known_seeds": ({Status.INCORRECT}, {"large_constant", "static:workload_import"}),
    "attack_late_spin": ({Status.CORRECT}, {"static:subprocess", "static:timer_patch"}),
    "attack_hidden_callback": ({Status.COMPILE_ERROR}, {"host_callback", "static:host_callback"}),
    "attack_host_abuse": ({Status.CORRECT}, {"static:file_access"}),
    # v9 (issue #23), class 1: a program that knows which call it is (refused before it runs)
    "attack_rng_call_counter": ({Status.COMPILE_ERROR}, {"disallowed_op"}),
    "attack_rng_in_loop": ({Status.COMPILE_ERROR}, {"disallowed_op"}),
    "attack_uninitialised_buffer": ({Status.COMPILE_ERROR}, {"native_call", "static:monkeypatch"}),
    "attack_side_effect_call": ({Status.COMPILE_ERROR}, {"disallowed_op", "static:monkeypatch"}),
    "attack_token_effect": ({Status.COMPILE_ERROR}, {"host_callback", "static:monkeypatch"}),
    # class 2: readiness facts from a program that never runs, or from the build's word
    "attack_platform_switch": ({Status.CORRECT}, set()),  # readiness "unverified" (READINESS below)
    "attack_copy_kernel": ({Status.CORRECT}, {NO_PALLAS}),
    # the kernel never runs: on CPU no kernel is credited (issue 40 §1, test_executed_work.py)
    "attack_dead_branch_kernel": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_wasted_kernel": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_forged_reply_lowering": ({Status.CORRECT}, {NO_PALLAS, "static:exit"}),
    "attack_forged_tpu_module": ({Status.CORRECT}, {"static:exit"}),  # readiness "unverified"
    # class 3: one candidate takes down the batch (it must take down only itself)
    "attack_deep_nesting": ({Status.COMPILE_ERROR}, {"oversized_program"}),
    "attack_huge_module": ({Status.COMPILE_ERROR}, {"oversized_program"}),
    # class 4: compile bombs
    "attack_compile_bomb": ({Status.COMPILE_ERROR}, {"oversized_program"}),
    # the compile deadline, or the runner's memory cap when the compile outgrows it first (a quiet host: ~50 s)
    "attack_compile_bomb_small": ({Status.TIMEOUT, Status.OUT_OF_MEMORY}, set()),
    # issue 40, class 1: the static reading of the TPU program is the machine's (more in test_static_reading.py)
    "attack_unsigned_when": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_wrapped_trip_count": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_unread_operands": ({Status.CORRECT}, {NO_PALLAS}),  # mostly_xla from the static reading alone
}
#: Attacks caught by the readiness comparison: the runnable program is not the TPU program.
READINESS = {"attack_platform_switch", "attack_forged_tpu_module"}
HONEST = ("honest_pallas_gemm", "honest_baseline_copy")
#: Attacks with a batch of their own (they cost their build's whole deadline): the test file that covers each.
ELSEWHERE = {"attack_session_flood": "test_session_flood.py"}


@pytest.fixture(scope="module")
def results() -> dict[str, EvalResult]:
    stems = list(HONEST) + list(ATTACKS)
    task = EvalTask(
        workload=WORKLOAD,
        kernel_path=KERNELS / f"{stems[0]}.py",
        size="small",
        seeds=2,
        warmup=1,
        iters=6,
        blocks=2,
        timeout_s=180,
    )
    with WarmRunner(task) as runner:
        return dict(zip(stems, runner.evaluate([KERNELS / f"{s}.py" for s in stems]), strict=True))


def _describe(r: EvalResult) -> str:
    return f"{r.status.value}: {r.reason} flags={r.integrity.flags} log={r.candidate_log[-800:]}"


def test_every_attack_kernel_is_covered() -> None:
    files = {p.stem for p in KERNELS.glob("*.py")}
    assert files == set(ATTACKS) | set(HONEST) | set(ELSEWHERE)
    assert all((Path(__file__).parent / test).exists() for test in ELSEWHERE.values())
    assert len(ATTACKS) >= 34


@pytest.mark.parametrize("stem", HONEST)
def test_honest_kernels_pass_untouched(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    assert r.status == Status.CORRECT, _describe(r)
    assert excluding(r.integrity.flags) == [], _describe(r)
    assert set(r.integrity.flags) <= LABEL_FLAGS and r.tpu_lowering == "ok" and r.readiness_check == "verified"


def test_honest_pallas_kernel_is_recognised_from_its_tpu_module(results: dict[str, EvalResult]) -> None:
    r = results["honest_pallas_gemm"]
    assert r.integrity.has_pallas and r.integrity.pallas_calls == 1 and NO_PALLAS not in r.integrity.flags
    assert r.pallas_coverage == 1.0 and r.env.interpret
    assert r.correctness.timed_outputs_checked == 6  # every timed output verified


@pytest.mark.parametrize("stem", sorted(ATTACKS))
def test_attack_is_caught(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    statuses, must_flag = ATTACKS[stem]
    caught = (
        r.status != Status.CORRECT
        or excluding(r.integrity.flags)
        or NO_PALLAS in r.integrity.flags
        or MOSTLY_XLA in r.integrity.flags
        or r.readiness_check == "unverified"
    )
    assert caught, _describe(r)
    if stem in READINESS:
        assert r.readiness_check == "unverified", _describe(r)
    assert r.status in statuses, _describe(r)
    assert must_flag <= set(r.integrity.flags), f"missing {sorted(must_flag - set(r.integrity.flags))}: {_describe(r)}"


def test_refusals_name_the_op(results: dict[str, EvalResult]) -> None:
    for stem, op in (
        ("attack_rng_call_counter", "stablehlo.rng"),
        ("attack_rng_in_loop", "stablehlo.rng"),
        ("attack_uninitialised_buffer", "AllocateBuffer"),
        ("attack_side_effect_call", "has_side_effect"),
        ("attack_token_effect", "stablehlo.create_token"),
    ):
        assert op in results[stem].reason, _describe(results[stem])


def test_nothing_ranked_comes_from_the_build_s_word(results: dict[str, EvalResult]) -> None:
    """A forged reply with an unreadable TPU module: does not lower, no Pallas, whatever it claimed."""
    r = results["attack_forged_reply_lowering"]
    assert r.tpu_lowering != "ok" and r.integrity.pallas_calls == 0 and r.pallas_coverage is None
    assert r.readiness_check is None


def test_bombs_and_monsters_cost_their_bound_not_the_cap(results: dict[str, EvalResult]) -> None:
    assert "nest more than" in results["attack_deep_nesting"].reason
    assert "over the inspection bound" in results["attack_huge_module"].reason
    assert "once its calls are inlined" in results["attack_compile_bomb"].reason
    small = results["attack_compile_bomb_small"]
    assert "compile time limit" in small.reason or "out of memory" in small.reason, _describe(small)
    assert small.deadlines_s["compile"] < 180  # the floor, not the 300 s cap
    assert small.overhead_s["compile"] <= small.deadlines_s["compile"] + 5


def test_exit_early_cannot_forge_a_result(results: dict[str, EvalResult]) -> None:
    """What the candidate prints is its log, never a result: the printed JSON 'correct' changes nothing."""
    r = results["attack_exit_early"]
    assert '"status": "correct"' in r.candidate_log and r.status == Status.CRASHED and r.kernel is None


def test_a_forged_reply_frame_is_a_crash_not_a_status(results: dict[str, EvalResult]) -> None:
    r = results["attack_forged_status"]
    assert r.status == Status.CRASHED and "invalid reply" in r.reason and "\n" not in r.reason


def test_known_seeds_do_not_exist_any_more(results: dict[str, EvalResult]) -> None:
    """No input file is visible to the build, and the seeds were fresh (recorded in the row)."""
    r = results["attack_known_seeds"]
    assert "INPUT FILES []" in r.candidate_log, r.candidate_log[:500]
    assert len(r.input_seeds) == 2 and not {0, 1, 2} >= set(r.input_seeds)
    assert r.integrity.details["inspection"]["runnable"]["constant_bytes"] >= 4 * 256 * 384 * 2


def test_smuggled_host_callback_is_refused_before_the_runner(results: dict[str, EvalResult]) -> None:
    r = results["attack_hidden_callback"]
    assert r.reason.startswith("refused:") and "callback" in r.reason and r.kernel is None


def test_host_abuse_is_contained(results: dict[str, EvalResult]) -> None:
    r = results["attack_host_abuse"]
    log = r.candidate_log
    assert r.integrity.details["build"]["log_bytes"] > 300 << 20  # it did write 300 MiB ...
    assert len(log.encode()) < (64 << 10) + 200 and "bytes of candidate output dropped" in log  # ... we kept 64 KiB
    assert "\x1b" not in log and "\x07" not in log and "\\x1b]0;pwned\\x07" in log and "ABUSE END" in log
    line = next(ln for ln in log.splitlines() if ln.startswith("ABUSE {"))
    for path in ("/etc/passwd", "/root/.bashrc", "/work/shared", "/home"):
        assert f"'{path}': 'denied" in line, line
    written = int(line.split("'tmp_written_mib': ")[1].split("}")[0].split(",")[0])
    assert written <= r.integrity.details["build"]["limits"]["tmpfs_mb"] < 1024


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_late_spinner_died_with_the_build(results: dict[str, EvalResult]) -> None:
    r = results["attack_late_spin"]
    assert r.integrity.details["build"]["survivors"] == 0 or r.env.sandbox != "bwrap"
    assert _processes_with("jaxbench-late-spin-child") == []


def test_planted_file_never_reaches_the_project(results: dict[str, EvalResult]) -> None:
    if results["attack_file_reference"].env.sandbox != "bwrap":
        pytest.skip("no bubblewrap here: the plain build can write the project")
    assert not (DATA_DIR / "planted_by_kernel.txt").exists()
