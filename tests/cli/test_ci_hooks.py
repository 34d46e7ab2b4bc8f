"""tests/conftest.py under CI: a sandbox test skipped for want of bubblewrap fails the run; elsewhere it skips."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
SUITE = """
import pytest

needs_bwrap = pytest.mark.skipif(True, reason="bubblewrap unusable: bwrap not found")

@needs_bwrap
def test_sandbox():
    pass

def test_other_skip():
    pytest.skip("Debian chromium missing")

def test_plain():
    pass
"""


@pytest.mark.parametrize("ci,failed,skipped", [("true", 1, 1), ("", 0, 2)])
def test_missing_bubblewrap_fails_only_under_ci(pytester, monkeypatch, ci, failed, skipped):
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 1 and outcomes.get("skipped") == skipped
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == failed  # a skipif is decided at setup: an error
    assert result.ret == (1 if failed else 0)
    if failed:
        result.stdout.fnmatch_lines(["*CI=true: the security suite may not be skipped*bubblewrap*"])
