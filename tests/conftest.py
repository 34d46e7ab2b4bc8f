"""Suite-wide hooks.

Under CI (`CI=true`, as GitHub Actions and .github/workflows/pull-request.yml set it), a test skipped because
bubblewrap is missing or unusable FAILS instead: those are the sandbox and boundary tests, the security suite, and
a CI machine that silently skips them would report green while testing nothing of the trust boundary. A laptop
without bubblewrap still skips them (scripts/setup installs it).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

#: How the sandbox-dependent tests word their skip (tests/sandbox, tests/harness/test_boundary.py,
#: tests/adversarial): `needs_bwrap` markers and the adversarial suite's run without bubblewrap. Other skips that
#: merely mention bubblewrap (the "none" sandbox mode without a pids cgroup) are not about a missing sandbox.
SECURITY_SKIPS = ("bubblewrap unusable", "no bubblewrap here")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and in_ci()) or getattr(report, "wasxfail", None) is not None:
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if any(marker in reason for marker in SECURITY_SKIPS):
        report.outcome = "failed"
        report.longrepr = (
            f"CI=true: the security suite may not be skipped ({reason}); install bubblewrap "
            "(scripts/setup) and give it user namespaces"
        )
