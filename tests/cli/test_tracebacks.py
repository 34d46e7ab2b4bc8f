"""What a submitter reads: the harness's private copy of a kernel is named as the submitted file everywhere."""

from __future__ import annotations

from bench.harness.protocol.result import EvalResult, Status
from bench.tracebacks import attribute


def _syntax_error_result() -> EvalResult:
    copy = "/x/build/eval/eval_ab12/kernel.py"
    return EvalResult(
        workload="8p_GEMM",
        status=Status.COMPILE_ERROR,
        size="small",
        tpu="cpu",
        reason="SyntaxError: invalid syntax (kernel.py, line 2)",
        traceback=f'  File "{copy}", line 2\n    def (:\n        ^\nSyntaxError: invalid syntax\n',
    )


def test_a_syntax_errors_reason_names_the_file_its_traceback_names(tmp_path):
    kernel = tmp_path / "my_kernel.py"
    kernel.write_text("def (:\n")
    r = attribute(_syntax_error_result(), kernel)
    assert r.reason == f"SyntaxError: invalid syntax ({kernel.resolve()}, line 2)"
    assert f'File "{kernel.resolve()}", line 2' in (r.traceback or "")
