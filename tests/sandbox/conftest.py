"""What the sandbox tests share: a started build zygote (tests with --import-mode=importlib import no helper
module, so it comes as a fixture)."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.harness.parent.warm import BuildZygote, ZygoteUnavailable
from bench.harness.protocol.messages import BuildRequest


def ready_zygote(request: BuildRequest, limits: sandbox.Limits, log: Path) -> Iterator[BuildZygote]:
    """A started build zygote for a fixture to yield from (skipped where the zygote cannot work), closed after."""
    z = BuildZygote(request, limits, log, 300)
    try:
        z.ready()
    except ZygoteUnavailable as exc:
        pytest.skip(f"the build zygote is not usable here: {exc}")
    yield z
    z.close()


@pytest.fixture(scope="session")
def zygote_started() -> Callable[[BuildRequest, sandbox.Limits, Path], Iterator[BuildZygote]]:
    """`yield from zygote_started(request, limits, log)` in a fixture: ready_zygote."""
    return ready_zygote
