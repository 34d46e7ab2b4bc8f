"""What every hand-tuned reference is: a library kernel, its block-size knobs, and an adapter to the workload.

Why one dataclass: `bench tune`, the submission kernels and the tests treat all eight references alike
(build with given block sizes, call with the workload's own inputs), so the knobs, their defaults and the
search spaces live next to the adapter in each module and are read from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Params = dict[str, int]
Builder = Callable[[Mapping[str, int]], Callable[..., Any]]


def fit_block(block: int, dim: int) -> int:
    """The largest of block, block/2, block/4, ... that divides dim (dim itself if block >= dim).

    Why: tables hold full-size block sizes; the same reference must run at the small size and on other
    shapes, where a tuned block can exceed or fail to divide the dimension.
    """
    b = min(int(block), int(dim))
    while b > 1 and dim % b:
        b //= 2
    return max(b, 1)


@dataclass(frozen=True)
class Reference:
    """One hand-tuned Pallas reference for one workload."""

    workload: str  # workload id, e.g. "8p_GEMM"
    kernel: str  # the maintained library kernel it calls
    defaults: Params  # used when the chip's table has no entry: the library's own defaults
    space: Mapping[str, tuple[int, ...]]  # TPU search space (upstream tune_pallas.py)
    small_space: Mapping[str, tuple[int, ...]]  # CPU / small-size space (interpret mode: few grid steps)
    build: Builder  # params -> fn(*workload inputs)
    interpret_ok: bool = True  # runs in TPU interpret mode on CPU
    interpret_note: str = ""  # why not, and what is checked instead
    constraints: Callable[[Mapping[str, int]], bool] = field(default=lambda p: True)  # e.g. block_k <= block_k_major

    def params(self, chip: str | None = None) -> Params:
        """Block sizes for `chip` (detected when None): its table entry, else `defaults`."""
        from pallas_refs.tables import current_chip, lookup

        entry = lookup(self.workload, chip or current_chip())
        return dict(entry["params"]) if entry else dict(self.defaults)

    def __call__(self, *inputs: Any) -> Any:
        """The workload signature: `workload(*inputs)` with the tuned block sizes of the current chip."""
        return self.build(self.params())(*inputs)
