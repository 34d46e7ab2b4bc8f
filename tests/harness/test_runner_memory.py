"""A runner that outgrows its memory cap aborts (std::bad_alloc, LLVM's out-of-memory abort): that is
`out_of_memory`, from the evidence the parent has (bench.harness.parent.session.RunnerProcess._memory_death):
the runner's own log since the request, or its peak resident memory, which the parent reads when it reaps the
child with wait4 (bench.harness.protocol.process.ChildProcess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.harness.parent.session import RUNNER_MEMORY_EVIDENCE, RunnerProcess
from bench.harness.protocol.process import ChildProcess, WorkerFailure
from bench.harness.protocol.result import Status


def test_reaping_a_child_records_its_peak_resident_memory(tmp_path: Path) -> None:
    reply_r, reply_w = os.pipe()
    child = ChildProcess(
        "child",
        [sys.executable, "-c", "b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096]);import os; os.abort()"],
        reply_fd=reply_r,
        env=dict(os.environ),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=(reply_w,),
    )
    os.close(reply_w)
    try:
        with pytest.raises(WorkerFailure) as failed:
            child.read_reply(30.0, "work", 1 << 20)
        assert failed.value.kind == Status.CRASHED and "died by signal SIGABRT" in failed.value.message
        assert child.peak_rss_mb is not None and child.peak_rss_mb >= 280
    finally:
        child.release()


def _runner(tmp_path: Path, log: str, peak_mb: float | None, cap: str = "RLIMIT_AS 1000 MiB") -> RunnerProcess:
    """A RunnerProcess handle in the state the parent holds after its runner died (no process started)."""
    runner = object.__new__(RunnerProcess)
    runner.log_path = tmp_path / "runner.log"
    runner.log_path.write_text("jax started\n" + log)
    runner.log_mark = len("jax started\n")
    runner.memory_mb, runner.peak_rss_mb = 1000, peak_mb
    runner.ready = SimpleNamespace(memory_cap=cap)
    return runner


DIED = WorkerFailure(Status.CRASHED, "runner died by signal SIGABRT without a verdict during compile")


def test_a_runner_that_says_so_or_filled_its_cap_ran_out_of_memory(tmp_path: Path) -> None:
    aborted = "terminate called after throwing an instance of 'std::bad_alloc'\n"
    said = _runner(tmp_path, aborted, None)._memory_death(DIED)
    assert said is not None and said.kind == Status.OUT_OF_MEMORY and "std::bad_alloc" in said.message
    full = _runner(tmp_path, "", RUNNER_MEMORY_EVIDENCE * 1000 + 1)._memory_death(DIED)
    assert full is not None and full.kind == Status.OUT_OF_MEMORY and "peak resident memory" in full.message


def test_other_deaths_are_not_blamed_on_memory(tmp_path: Path) -> None:
    assert _runner(tmp_path, "", 100.0)._memory_death(DIED) is None  # far from its cap, nothing said
    uncapped = _runner(tmp_path, "std::bad_alloc", 990.0, cap="skipped (RLIMIT_AS unusable on accelerators)")
    assert uncapped._memory_death(DIED) is None
    hung = WorkerFailure(Status.TIMEOUT, "runner exceeded the compile time limit of 60 s")
    assert _runner(tmp_path, "std::bad_alloc", 990.0)._memory_death(hung) is None
    # an earlier request's message (a MemoryError the runner caught and replied) is not this request's
    earlier = _runner(tmp_path, "", 100.0)
    earlier.log_path.write_text("jax started\nout of memory\n")
    earlier.log_mark = len("jax started\nout of memory\n")
    assert earlier._memory_death(DIED) is None
