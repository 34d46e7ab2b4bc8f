"""`bench prompt`: every element of the paper's Appendix B, the chip's numbers from our table, the task facts,
the feedback block from a harness EvalResult, templates, the reply parser.

The list of elements is tests/agent/appendix_b.md, a committed copy of the "Appendix B" section of the project's
spec shared/spec/paper-results.md (committed so the test does not depend on ../shared; when it is present, the
copy must equal it). Each check below cites the phrase of that list it holds the prompt to.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.agent.feedback import OUTPUT_LINES, attempt_from_result, feedback
from bench.agent.prompts import render
from bench.agent.reply import parse_reply
from bench.agent.spec import task_spec
from bench.app import app
from bench.cli import main  # noqa: F401  registers every command
from bench.hardware import CHIPS
from bench.harness.protocol.result import Correctness, EvalResult, ProfileOp, Status, Timing
from bench.paths import ROOT

APPENDIX_B = Path(__file__).with_name("appendix_b.md")
SHARED = ROOT.parent / "shared" / "spec" / "paper-results.md"  # beside the repository, when present
runner = CliRunner()


def _appendix_b() -> str:
    return APPENDIX_B.read_text()


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="cpu_wall_clock", num_iters=10)


def correct_result() -> EvalResult:
    return EvalResult(
        workload="8p_GEMM",
        status=Status.CORRECT,
        reason="correct on 3 seed(s)",
        size="small",
        tpu="cpu",
        correctness=Correctness(correct=True, reason="ok"),
        baseline=_timing(2.5),
        kernel=_timing(1.25),
        speedup_vs_baseline=2.0,
        profile_top_ops=[
            ProfileOp(name="while.7", total_ms=1.1, pct=88.0, count=1),
            ProfileOp(name="copy.2", total_ms=0.1, pct=8.0, count=1),
        ],
    )


def failed_result() -> EvalResult:
    log = "\n".join(f"candidate output line {i}" for i in range(100))
    return EvalResult(
        workload="8p_GEMM",
        status=Status.COMPILE_ERROR,
        reason="lowering failed",
        size="small",
        tpu="cpu",
        error="ValueError: block shape (7, 100) not divisible by (8, 128)",
        candidate_log=log,
    )


# Appendix B, element by element: (what the paper lists, the phrase of appendix_b.md stating it, check on the prompt).
# The phrase ties each check to the list: if the spec changes, the test says which element moved.
FIRST_TURN = [
    ("target TPU v6e (Trillium)", "TPU v6e\n  (Trillium)", lambda p: "TPU v6e (Trillium)" in p),
    ("Pallas, jax.experimental.pallas", "`jax.experimental.pallas`", lambda p: "`jax.experimental.pallas`" in p),
    ("VMEM 128 MiB", "VMEM 128 MiB", lambda p: "128 MiB of VMEM" in p),
    ("8 TensorCores per chip", "8 TensorCores per\n  chip", lambda p: "8 TensorCores per chip" in p),
    ("about 918 TFLOPS bf16 peak", "918 TFLOPS bf16 peak", lambda p: "about 918 TFLOPS peak bf16" in p),
    ("about 1640 GB/s HBM", "1640 GB/s HBM", lambda p: "about 1640 GB/s of HBM" in p),
    (
        "rule: keep the public workload(*inputs) signature",
        "`workload(*inputs)` signature",
        lambda p: "Keep the public entry point `workload(*inputs)`" in p,
    ),
    (
        "rule: one complete Python file in a single python code block",
        "single python code block",
        lambda p: "one complete Python file, inside a single ```python code block" in p,
    ),
    (
        "rule: no prose outside the block",
        "no prose\n  outside the block",
        lambda p: "no prose outside that code block" in p,
    ),
    (
        "strategy: correct straightforward translation first",
        "first get a correct, straightforward Pallas translation",
        lambda p: (
            "first get a correct Pallas kernel, a plain and direct translation" in p
            and "even if it is\nnot faster" in p
        ),
    ),
    (
        "strategy: optimize only once a correct kernel exists",
        "optimize only once a correct Pallas kernel exists",
        lambda p: "Start optimizing only once you have a Pallas kernel that is correct" in p,
    ),
    ("a line `Benchmark: <id>`", "a line `Benchmark: <id>`", lambda p: re.search(r"^Benchmark: 8p_GEMM$", p, re.M)),
    (
        "one sentence: rewrite the XLA/JAX reference as a faster Pallas kernel with identical outputs",
        "rewrite the XLA/JAX reference below as a Pallas kernel with identical outputs that runs\n  faster",
        lambda p: (
            "Rewrite the XLA/JAX reference below as a Pallas kernel that returns identical outputs and runs faster" in p
        ),
    ),
    (
        "the JAX source in a python code block",
        "the JAX source in a python code block",
        lambda p: '```python\n"""8p_GEMM:' in p and "def workload(A, B):\n    return jnp.dot(A, B)\n```" in p,
    ),
]
LATER_TURN_CORRECT = [
    ("its latency in ms", "its latency in ms", lambda p: "Previous attempt was correct. Latency 1.2500 ms" in p),
    ("the XLA baseline latency", "the XLA baseline latency", lambda p: "XLA baseline 2.5000 ms" in p),
    ("the speedup", "the speedup", lambda p: "speedup 2.000x" in p),
    (
        "the best latency so far in this chain",
        "the best latency\n    so far in this chain",
        lambda p: "Best-so-far in this chain: 1.2500 ms" in p,
    ),
    (
        "a profiler summary (top operators by time)",
        "a profiler summary (top operators by time)",
        lambda p: "top operators by time" in p and "- while.7: 1.1000 ms" in p,
    ),
    (
        "the previous implementation's full source in a python code block",
        "full source in a python code block",
        lambda p: "Previous implementation:\n```python\n# my previous kernel\ndef workload(A, B):" in p,
    ),
    (
        "then asks again for a complete Pallas implementation",
        "asks again\n  for a complete Pallas implementation",
        lambda p: p.rstrip().endswith("Write the complete Pallas implementation again, improved."),
    ),
]
LATER_TURN_FAILED = [
    (
        "a line saying the attempt was incorrect or failed",
        "incorrect or failed: a line saying so",
        lambda p: "Previous attempt was incorrect or failed to run" in p,
    ),
    (
        "followed by the last 40 lines of the runner's stdout",
        "the last 40 lines of the runner's\n    stdout",
        lambda p: (
            f"Last {OUTPUT_LINES} lines of the runner's output" in p
            and "candidate output line 99" in p
            and "candidate output line 59\n" not in p
            and "candidate output line 60\n" in p
        ),
    ),
]


def _cli(*args: str) -> str:
    res = runner.invoke(app, ["prompt", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def later_turns(tmp_path_factory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("fb")
    prev = d / "prev.py"
    prev.write_text("# my previous kernel\ndef workload(A, B):\n    return A @ B\n")
    out = []
    for name, result in (("ok", correct_result()), ("bad", failed_result())):
        (d / f"{name}.json").write_text(result.model_dump_json())
        out.append(
            _cli("8p_GEMM", "--method", "iterative", "--feedback", str(d / f"{name}.json"), "--previous", str(prev))
        )
    return out[0], out[1]


def test_appendix_b_checklist_matches_the_spec():
    """Every phrase the checklist cites is in the committed Appendix B list."""
    flat = " ".join(_appendix_b().split())
    for element, phrase, _ in FIRST_TURN + LATER_TURN_CORRECT + LATER_TURN_FAILED:
        assert " ".join(phrase.split()) in flat, f"Appendix B no longer states: {element}"


def test_committed_copy_equals_the_spec():
    if not SHARED.is_file():
        pytest.skip("the shared spec is not beside this checkout")
    text = SHARED.read_text()
    assert text[text.index("## Appendix B") :] == _appendix_b()


@pytest.mark.parametrize("element,phrase,check", FIRST_TURN, ids=[e for e, _, _ in FIRST_TURN])
def test_first_turn_has_every_element(element, phrase, check):
    assert check(_cli("8p_GEMM", "--method", "iterative")), element


@pytest.mark.parametrize("element,phrase,check", LATER_TURN_CORRECT, ids=[e for e, _, _ in LATER_TURN_CORRECT])
def test_feedback_after_a_correct_attempt(later_turns, element, phrase, check):
    assert check(later_turns[0]), element


@pytest.mark.parametrize("element,phrase,check", LATER_TURN_FAILED, ids=[e for e, _, _ in LATER_TURN_FAILED])
def test_feedback_after_a_failed_attempt(later_turns, element, phrase, check):
    assert check(later_turns[1]), element
    assert "Best-so-far in this chain: no correct attempt yet." in later_turns[1]


def test_task_facts_shapes_dtypes_tolerance():
    p = _cli("8p_GEMM", "--size", "small")
    assert "- input 0: A: bfloat16[256, 512]" in p and "- input 1: B: bfloat16[512, 384]" in p
    assert "- output: out: bfloat16[256, 384]" in p
    # the size's own tolerance: 8p's full-size atol (0.63, long bf16 sums) is not its small size's (0.01)
    assert "atol = 0.01" in p and "rtol = 0.01" in p and "must not exceed\n  0.05" in p
    full = _cli("8p_GEMM")
    assert "A: bfloat16[8192, 8192]" in full and "out: bfloat16[8192, 28672]" in full
    assert "atol = 0.63" in full and "atol = 0.63" not in p


def test_static_inputs_are_described():
    s = task_spec("11p_Megablox_GMM", "small")
    assert [x.describe() for x in s.inputs][-1] == "max_expert_size: static int = 128"


@pytest.mark.parametrize("chip", ["v6e", "v5e", "v4"])
def test_chip_numbers_come_from_the_hardware_table(chip):
    spec = CHIPS[chip]
    p = _cli("8p_GEMM", "--chip", chip)
    assert f"about {spec.peak_bf16_tflops:g} TFLOPS" in p and f"about {spec.hbm_gb_s:g} GB/s" in p
    assert ("MiB of VMEM" in p) == (spec.vmem_mib is not None)


def test_json_has_the_chat_messages():
    d = json.loads(_cli("41k", "--json", "--method", "best-of-n"))
    assert [m["role"] for m in d["messages"]] == ["system", "user"]
    assert d["workload"] == "41k_Gemm_Add_ReLU" and d["feedback"] is None and d["turn"] == 0


def test_a_replacement_template_extends_ours(tmp_path):
    t = tmp_path / "mine.j2"
    t.write_text('{% extends "prompt.md.j2" %}{% block task %}Make {{ spec.workload }} fast, in Pallas.{% endblock %}')
    p = _cli("8p_GEMM", "--template", str(t))
    assert "Make 8p_GEMM fast, in Pallas." in p and "Rewrite the XLA/JAX reference" not in p
    assert "Benchmark: 8p_GEMM" in p and "918 TFLOPS" in p


def test_template_without_the_blocks_is_refused(tmp_path):
    t = tmp_path / "bad.j2"
    t.write_text("hello {{ spec.workload }}")
    with pytest.raises(ValueError, match="block"):
        render(task_spec("8p_GEMM", "small"), "best-of-n", template=t)


def test_iterative_context_prepends_the_pack():
    p = _cli("8p_GEMM", "--method", "iterative-context")
    assert p.index("# Context pack v1+jax") < p.index("You optimize a JAX kernel") < p.index("Benchmark: 8p_GEMM")
    assert "## Rules" in p and "## Pallas API" in p


def test_feedback_uses_the_best_of_the_chain():
    ok, bad = attempt_from_result(correct_result()), attempt_from_result(failed_result())
    assert len(bad.output_tail) == OUTPUT_LINES and bad.outcome == "api_runtime_error" and ok.outcome == "correct"
    fb = feedback(bad, "src", [ok, bad])
    assert not fb.correct and fb.best_ms == 1.25 and fb.best_speedup == 2.0


@pytest.mark.parametrize(
    "reply,kind",
    [
        ("```python\nx = 1\n```", "ok"),
        ("Here you go:\n```python\nx = 1\n```\nEnjoy.", "ok"),
        ("```\nx = 1\n```", "ok"),
        ("no code at all", "no_code_block"),
        ("```python\nx = 1\n```\n```python\ny = 2\n```", "several_code_blocks"),
        ("```\nx = 1\n```\n```\ny = 2\n```", "several_code_blocks"),
        ("```bash\nls\n```", "no_code_block"),
    ],
)
def test_reply_parser(reply, kind):
    parsed = parse_reply(reply)
    assert parsed.kind == kind
    assert parsed.source == ("x = 1\n" if kind == "ok" else reply)


def _later(previous, source: str, chain=None, sources=None) -> str:
    chain = chain or [previous]
    return render(
        task_spec("8p_GEMM", "small"), "iterative", turn=len(chain), feedback=feedback(previous, source, chain, sources)
    ).user


def _cpu_env():
    from bench.harness.protocol.result import Environment

    return Environment(
        backend="cpu",
        chip="cpu",
        device_kind="cpu",
        jax_version="0",
        jaxlib_version="0",
        harness_version="0",
        interpret=True,
    )


def test_prompt_names_the_jax_version_interpret_mode_and_labels_the_papers_chip_wording():
    import importlib.metadata

    p = _cli("8p_GEMM", "--size", "small")
    assert f"jax {importlib.metadata.version('jax')} is installed" in p
    assert "Leave `interpret` unset" in p and "TPU\ninterpret mode itself" in p
    assert "The VMEM and TensorCore figures are the wording of the JAXBench paper's prompt, not a data sheet" in p
    assert "not a data sheet" not in _cli("8p_GEMM", "--chip", "v5e")  # v5e shows no such figures


def test_feedback_reports_lowering_attributed_to_the_file_interval_and_interpret_mode(tmp_path):
    kernel = tmp_path / "chain000_turn000.py"
    kernel.write_text("def workload(A, B): ...\n")
    result = correct_result().model_copy(
        update={
            "env": _cpu_env(),
            "tpu_lowering": f"ValueError: block shape (8, 96) in pallas_call at {kernel}:8 is not "
            "divisible by (8, 128)",
        }
    )
    result = result.model_copy(
        update={
            "speedup_ci": (1.8, 2.3),
            "timing_quality": "noisy",
            "timing_quality_reason": "interval wider than 0.15",
        }
    )
    a = attempt_from_result(result, kernel)
    assert a.lowers is False and str(kernel) not in a.tpu_lowering and "at kernel.py:8" in a.tpu_lowering
    p = _later(a, kernel.read_text())
    assert "Previous attempt was correct. Latency 1.2500 ms" in p
    assert "TPU lowering (Mosaic) of kernel.py FAILED" in p and "never submitted over one that does" in p
    assert "pallas_call at kernel.py:8 is not divisible" in p
    assert "CPU times of Pallas in TPU interpret mode" in p
    assert "speedup 2.000x, 95% interval 1.800-2.300x" in p
    assert "The timing was noisy (interval wider than 0.15): differences inside the interval are not real" in p
    ok = attempt_from_result(correct_result().model_copy(update={"tpu_lowering": "ok"}))
    p = _later(ok, "x = 1\n")
    assert "TPU lowering (Mosaic) of kernel.py: ok." in p and "interpret mode" not in p.split("Benchmark:")[-1][-2000:]


def test_feedback_states_pallas_coverage_when_known():
    from dataclasses import replace

    a = replace(attempt_from_result(correct_result()), pallas_coverage=0.875, tpu_lowering="ok")
    assert "Pallas coverage: 88% of the workload's FLOPs and HBM bytes" in _later(a, "x = 1\n")
    assert "Pallas coverage" not in _later(attempt_from_result(correct_result()), "x = 1\n")


@pytest.mark.parametrize(
    "reply,why",
    [
        ("I would use a tiled matmul with 128x128 blocks.", "it has no ```python code block"),
        (
            "```python\ndef workload(A, B):\n    return A @ B\n```\nor\n"
            "```python\ndef workload(A, B):\n    return B.T @ A.T\n```",
            "it has several code blocks",
        ),
    ],
)
def test_a_reply_that_was_not_evaluated_is_called_your_reply_and_quoted_safely(reply, why):
    from bench.agent.feedback import unparsed_attempt

    parsed = parse_reply(reply)
    earlier = attempt_from_result(correct_result())
    bad = unparsed_attempt(parsed.kind, reply)
    p = _later(bad, parsed.source, [earlier, bad], ["# turn 0 kernel\ndef workload(A, B):\n    return A @ B\n", reply])
    assert f"Your reply was not evaluated: {why}" in p and "Your reply:\n" in p
    assert "runner's output" not in p and "Previous attempt was" not in p
    # the reply is quoted in a fence its own ``` lines cannot close, and is never shown as an implementation
    quoted = p[p.index("Your reply:\n") :]
    fence = quoted.splitlines()[1]
    longest = max((len(run) for run in re.findall("`+", reply)), default=0)
    assert fence == "`" * max(3, longest + 1) + "text"
    body = quoted[quoted.index(fence) + len(fence) + 1 :]
    assert body.index("\n" + fence[:-4] + "\n") == len(reply.rstrip())  # closed right after the whole reply
    assert "Previous implementation:" not in p
    # turns are numbered as in the trajectory: this prompt is turn 2, the kernel shown is turn 0's
    assert "This is turn 2 of chain 0 (turns count from 0, as in the run's trajectory)" in p
    assert "Your last implementation that was evaluated (turn 0):\n```python\n# turn 0 kernel" in p
    assert "Best-so-far in this chain: 1.2500 ms" in p


def test_an_empty_reply_is_said_to_be_empty():
    from bench.agent.feedback import unparsed_attempt

    p = _later(unparsed_attempt("no_code_block", ""), "")
    assert "Your reply was empty." in p and "Your reply:" not in p and "Previous implementation" not in p


def test_a_long_unevaluated_reply_is_quoted_by_its_end():
    from bench.agent.feedback import OUTPUT_LINES, unparsed_attempt

    reply = "\n".join(f"line {i}" for i in range(100))
    p = _later(unparsed_attempt("no_code_block", reply), reply)
    assert f"The end of your reply (its last {OUTPUT_LINES} of 100 lines):\n```text\nline 60\n" in p
    assert "line 59\n" not in p and "line 99\n```" in p


def test_quoted_sources_cannot_break_their_fence():
    """A previous source holding its own ``` lines (a docstring with markdown) stays one block."""
    source = 'def workload(A, B):\n    """Example:\n```python\nworkload(a, b)\n```\n"""\n    return A @ B\n'
    p = _later(attempt_from_result(correct_result()), source)
    block = p[p.index("Previous implementation:\n") + len("Previous implementation:\n") :]
    assert block.startswith("````python\n") and "\n````\n" in block
    inner = block[len("````python\n") : block.index("\n````\n")]
    assert inner == source.rstrip()


def test_reply_parser_keeps_a_longer_fence_whole():
    reply = '````python\ndef workload(A, B):\n    """```\ninner\n```"""\n    return A @ B\n````\n'
    parsed = parse_reply(reply)
    assert parsed.kind == "ok" and '"""```\ninner\n```"""' in parsed.source


def test_feedback_shortens_the_paths_of_this_machine(tmp_path):
    """The model reads site-packages/... and python3.X/..., never the builder's venv or checkout layout."""
    kernel = tmp_path / "chain000_turn001.py"
    kernel.write_text("x = 1\n")
    venv = ROOT / ".venv" / "lib" / "python3.11"
    tb = (
        f'Traceback (most recent call last):\n  File "{kernel}", line 1, in <module>\n'
        f'  File "{venv}/site-packages/jax/_src/api.py", line 9, in jit\n'
        f'  File "/usr/lib/python3.11/functools.py", line 3, in wrapper\n'
        f'  File "{ROOT}/workloads/gemm.py", line 4, in workload\nValueError: boom\n'
    )
    result = failed_result().model_copy(
        update={"traceback": tb, "candidate_log": None, "reason": f"ValueError at {venv}/site-packages/x.py"}
    )
    a = attempt_from_result(result, kernel)
    text = "\n".join(a.output_tail) + a.reason
    assert str(ROOT) not in text and "/.venv/" not in text and "/usr/lib" not in text
    assert 'File "site-packages/jax/_src/api.py", line 9' in text and 'File "python3.11/functools.py"' in text
    assert 'File "workloads/gemm.py", line 4' in text and 'File "kernel.py", line 1' in text
    assert a.reason == "ValueError at site-packages/x.py"


def test_a_syntax_errors_reason_and_traceback_name_one_file(tmp_path):
    """Python's SyntaxError message names the base name of the harness's private copy (kernel.py) while the
    traceback names the submitted file: the model reads the same name in both."""
    kernel = tmp_path / "chain000_turn000.py"
    kernel.write_text("def workload(A, B)\n")
    result = EvalResult(
        workload="8p_GEMM",
        status=Status.COMPILE_ERROR,
        size="small",
        tpu="cpu",
        reason="SyntaxError: expected ':' (kernel.py, line 1)",
        traceback=f'  File "{kernel}", line 1\n    def workload(A, B)\n                      ^\n'
        "SyntaxError: expected ':'\n",
    )
    p = _later(attempt_from_result(result, kernel), kernel.read_text())
    assert "(compile_error: SyntaxError: expected ':' (kernel.py, line 1))" in p
    assert 'File "kernel.py", line 1' in p and "chain000_turn000" not in p and str(tmp_path) not in p


def test_an_incorrect_outputs_worst_index_is_explained():
    """worst_index is the element furthest outside the tolerance, not the element of max_abs_err: the feedback
    says so and gives max_abs_err."""
    corr = Correctness(
        correct=False,
        reason="values differ: 3 of 64 elements outside |ref-out| <= 0.01 + 0.01*|ref|; "
        "worst at [2, 5]: ref 0.001, got 0.5",
        max_abs_err=7.25,
        worst_index=[2, 5],
        worst_ref=0.001,
        worst_out=0.5,
    )
    result = EvalResult(
        workload="8p_GEMM", status=Status.INCORRECT, reason=corr.reason, size="small", tpu="cpu", correctness=corr
    )
    a = attempt_from_result(result)
    assert a.worst_index == (2, 5) and a.max_abs_err == 7.25
    from bench.agent.feedback import Attempt

    assert Attempt.from_dict(a.as_dict()) == a  # journaled and read back
    p = _later(a, "x = 1\n")
    assert (
        '"worst at [...]" is the element furthest outside the tolerance, |ref-out| - (atol + rtol*|ref|), '
        "index [2, 5]; it need not hold the largest absolute error (max |ref-out| over the output: 7.25)"
    ) in p
    assert "worst at [...]" not in _later(attempt_from_result(failed_result()), "x = 1\n")


def test_top_ops_are_times_per_run_of_the_program_not_per_call():
    """ProfileOp.total_ms is an operator's time per run (all its calls), and operators overlap: the feedback says
    so instead of calling it a per-call time that should add up to the latency."""
    result = correct_result().model_copy(
        update={
            "profile_top_ops": [
                ProfileOp(name="fusion.1", total_ms=1.2, pct=60.0, count=4),
                ProfileOp(name="dot.3", total_ms=1.0, pct=40.0, count=1),
            ]
        }
    )
    p = _later(attempt_from_result(result), "x = 1\n")
    assert "ms per call" not in p
    assert "- fusion.1: 1.2000 ms per run, 4 calls (60.0%)" in p and "- dot.3: 1.0000 ms per run, 1 call (40.0%)" in p
    assert "operators can nest or overlap, so these need not add up to the latency" in p
