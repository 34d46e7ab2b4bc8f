"""The IR's integer semantics, exactly (TRUSTED): the one evaluator of integer ops for every static reading.

Who reads integers statically: mosaic.py (conditions and trip counts inside a Mosaic kernel), kernels.py (the
interpreter's grid loop and the Mosaic index maps, step by step), work.py (branch indices and trip counts of the
TPU program's StableHLO). A reading that is not the machine's credits work that never runs (issue 40 §1: a
condition on `program_id - 1000` read without 32-bit wrap, an int32 trip count that wraps negative), so there is
one semantics, here:
- values are bit patterns (an int in [0, 2^width)); each op's result is its pattern at the result's width;
- signedness is the op's (arith's `divsi` / `divui`, `cmpi`'s predicate) or, for StableHLO, the element type's
  (or `compare`'s comparison_type); `index` is 64-bit;
- None where the IR leaves the result undefined (a zero divisor, the signed minimum over -1, a shift past the
  width, a broken `nsw` / `nuw` promise), for floats (NaN), and for any op not known here.
StableHLO calls some of those results implementation-defined. The interpreter's loop runs on XLA:CPU, which
defines them (a quotient of all ones, the dividend as remainder, zeros past the width): `xla_cpu=True` follows
it; the TPU program's reading (`xla_cpu=False`) leaves them unknown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from bench.harness.inspection.module import Module, Op, shape_of

IntFn = Callable[[list[int]], int | None]
Kind = tuple[int, bool]  # (width, signed)

#: arith.cmpi's predicates, in the enum's order (its integer attribute indexes this list)
PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def kind(type_text: str, one_element: bool = False) -> Kind | None:
    """(width, signed) of a scalar integer type: `i32`, `si8`, `ui8`, `index` (64, signed), `tensor<i32>` (rank 0;
    with `one_element`, any tensor of one element); i1 is unsigned. None for floats and anything else."""
    t = type_text.strip()
    if t.startswith("tensor<"):
        s = shape_of(t)
        if s is None or (s[0] != () and not (one_element and math.prod(s[0]) == 1)):
            return None
        t = s[1]
    if t == "index":
        return 64, True
    m = re.fullmatch(r"([su]?)i(\d+)", t)
    if m is None or not 0 < int(m.group(2)) <= 128:
        return None
    return int(m.group(2)), m.group(1) != "u" and m.group(2) != "1"


def width(type_text: str) -> int | None:
    """Bit width of a scalar integer type (None for floats, vectors, memrefs)."""
    k = kind(type_text)
    return k[0] if k else None


def mask(w: int | None) -> int:
    return (1 << w) - 1 if w else 0


def to_signed(pattern: int, w: int) -> int:
    """Two's complement reading of a `w`-bit pattern (i1's true is -1)."""
    return pattern - (1 << w) if (pattern >> (w - 1)) & 1 else pattern


def value(pattern: int, k: Kind) -> int:
    """The number a pattern of type `k` holds (two's complement where signed)."""
    return to_signed(pattern, k[0]) if k[1] else pattern


def holds(pred: str, x: int, y: int) -> bool:
    """`pred` (eq, ne, lt, le, gt, ge) on two numbers."""
    return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}[pred]


def compare(pred: str, x: int, y: int, w: int, signed: bool) -> bool:
    """`pred` on two `w`-bit patterns, read signed or unsigned."""
    return holds(pred, to_signed(x, w), to_signed(y, w)) if signed else holds(pred, x, y)


def evaluate(op: Op, args: list[int], xla_cpu: bool = True) -> int | None:
    """The result pattern of one integer op (any dialect) on its operands' patterns (None: unknown)."""
    fn = function(op, xla_cpu)
    return None if fn is None else fn(args)


def function(op: Op, xla_cpu: bool = True, one_element: bool = False) -> IntFn | None:
    """The integer op as a function of its operands' patterns (None: not an integer op known here). Parsed once
    per op: the grid loop runs it at every step."""
    rt = kind(op.types[0], one_element) if len(op.types) == 1 else None
    if rt is None:
        return None
    w, m = rt[0], mask(rt[0])
    if op.name.split(".", 1)[-1] == "constant":
        c = op.scalar
        return (lambda a: int(c) & m) if isinstance(c, (bool, int)) else None
    if op.name == "tpu.assume_multiple":  # `pl.multiple_of`: the value, where the promise holds
        n = int(op.attrs.get("multiple", "0").split(":")[0] or 0)
        return lambda a: a[0] if n > 0 and to_signed(a[0], w) % n == 0 else None
    if op.name.startswith(("arith.", "math.")):
        return lambda a: arith(op, a)
    if op.name.startswith("stablehlo."):
        kinds = [kind(t, one_element) for t in op.arg_types]
        if not kinds or any(k is None for k in kinds):
            return None
        return _stablehlo(op, rt, kinds, xla_cpu)  # type: ignore[arg-type]
    return None


def _stablehlo(op: Op, rt: Kind, kinds: list[Kind], xla_cpu: bool) -> IntFn | None:
    n, (w, signed), m = op.name[len("stablehlo.") :], rt, mask(rt[0])

    def s(x: int) -> int:  # the number a pattern of the result's type holds
        return to_signed(x, w) if signed else x

    simple: dict[str, IntFn] = {
        "add": lambda a: (a[0] + a[1]) & m,
        "subtract": lambda a: (a[0] - a[1]) & m,
        "multiply": lambda a: (a[0] * a[1]) & m,
        "and": lambda a: a[0] & a[1],
        "or": lambda a: a[0] | a[1],
        "xor": lambda a: a[0] ^ a[1],
        "not": lambda a: ~a[0] & m,
        "negate": lambda a: -a[0] & m,
        "abs": lambda a: abs(s(a[0])) & m,
        "select": lambda a: a[1] if a[0] else a[2],
        "maximum": lambda a: max(a, key=s),
        "minimum": lambda a: min(a, key=s),
        "clamp": lambda a: min(max(a[1], a[0], key=s), a[2], key=s),
        "reshape": lambda a: a[0],
        "broadcast_in_dim": lambda a: a[0],
    }
    if n in simple:
        return simple[n]
    src = kinds[0]
    if n == "bitcast_convert":
        return (lambda a: a[0]) if src[0] == w else None
    if n == "convert":
        if w == 1:
            return lambda a: int(a[0] != 0)
        return (lambda a: to_signed(a[0], src[0]) & m) if src[1] else (lambda a: a[0] & m)
    if n == "compare":
        reading = comparison(op, src)
        if reading is None:
            return None
        pred, sgn = reading
        return lambda a: int(compare(pred, a[0], a[1], src[0], sgn))
    if n in ("divide", "remainder"):

        def divide(a: list[int]) -> int | None:
            x, y = s(a[0]), s(a[1])
            if y == 0 or (signed and x == -(1 << (w - 1)) and y == -1):
                if not xla_cpu:  # implementation-defined
                    return None
                if y == 0:  # XLA: quotient all ones, remainder the dividend
                    return m if n == "divide" else a[0]
            q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)  # truncated towards zero
            return ((x - q * y) if n == "remainder" else q) & m

        return divide
    if n in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):

        def shift(a: list[int]) -> int | None:
            if a[1] >= w:  # XLA: zeros, or the sign for an arithmetic right shift
                return None if not xla_cpu else m if n.endswith("arithmetic") and to_signed(a[0], w) < 0 else 0
            if n == "shift_left":
                return (a[0] << a[1]) & m
            return (to_signed(a[0], w) >> a[1]) & m if n.endswith("arithmetic") else a[0] >> a[1]

        return shift
    return None


def comparison(op: Op, operands: Kind) -> tuple[str, bool] | None:
    """A `stablehlo.compare` of integers as (predicate, signed): its direction, and its `compare_type` (the
    operands' own signedness where it has none); None for FLOAT / TOTALORDER or a direction not read."""
    d = re.search(r"(LT|LE|GT|GE|NE|EQ)", op.attrs.get("comparison_direction", ""))
    ctype = re.search(r"(SIGNED|UNSIGNED|FLOAT|TOTALORDER)", op.attrs.get("compare_type", ""))
    read = ctype.group(1) if ctype else ("SIGNED" if operands[1] else "UNSIGNED")
    return (d.group(1).lower(), read == "SIGNED") if d and read in ("SIGNED", "UNSIGNED") else None


def constant(module: Module, vid: int, xla_cpu: bool = True, one_element: bool = False, depth: int = 0) -> int | None:
    """The pattern of an integer expression of constants only (None: it depends on anything else)."""
    op = module.defs.get(vid)
    fn = function(op, xla_cpu, one_element) if op is not None and not op.regions and depth < 32 else None
    if fn is None:
        return None
    args = [constant(module, a, xla_cpu, one_element, depth + 1) for a in op.args]  # type: ignore[union-attr]
    try:
        return None if None in args else fn(args)  # type: ignore[arg-type]
    except (IndexError, KeyError, ValueError):  # a malformed op: not evaluated
        return None


# ---------------------------------------------------------------- Mosaic's arith and math dialects


def _predicate(text: str) -> str | None:
    """arith.cmpi's predicate, from its attribute text (the enum's number or its name)."""
    t = text.strip()
    if not t:
        return None
    if t[0].isdigit():
        n = int(re.match(r"\d+", t).group(0))  # type: ignore[union-attr]
        return PREDICATES[n] if n < len(PREDICATES) else None
    name = t.split()[0]
    return name if name in PREDICATES else None


def _division(name: str, x: int, y: int, w: int) -> int | None:
    """Integer division and remainder at `w` bits; None where the IR leaves it undefined (a zero divisor, the
    signed minimum divided by -1)."""
    if name.endswith("ui"):
        if y == 0:
            return None
        if name == "arith.divui":
            return x // y
        if name == "arith.ceildivui":
            return -(-x // y)
        return x % y if name == "arith.remui" else None
    a, b = to_signed(x, w), to_signed(y, w)
    if b == 0 or (a == -(1 << (w - 1)) and b == -1):
        return None
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # truncated towards zero
    results = {
        "arith.divsi": quotient,
        "arith.floordivsi": a // b,
        "arith.ceildivsi": -(-a // b),
        "arith.remsi": a - b * quotient,
    }
    return results.get(name)


def _shift(name: str, x: int, y: int, w: int) -> int | None:
    if y >= w:  # poison
        return None
    if name == "arith.shli":
        return x << y
    return to_signed(x, w) >> y if name == "arith.shrsi" else x >> y


def _overflows(op: Op, exact_signed: int, exact_unsigned: int, w: int) -> bool:
    """An `nsw` / `nuw` flag whose promise the exact result breaks (the result is poison)."""
    flags = op.attrs.get("overflowFlags", "")
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return ("nsw" in flags and not lo <= exact_signed <= hi) or ("nuw" in flags and not 0 <= exact_unsigned < 1 << w)


def arith(op: Op, a: list[int]) -> int | None:
    """One arith / math op on scalar integers given as bit patterns, evaluated exactly at its type's width (the
    result's pattern; None for anything not evaluated exactly, a malformed op included)."""
    try:
        return _arith(op, a)
    except (IndexError, KeyError, ValueError):
        return None


def _arith(op: Op, a: list[int]) -> int | None:
    if len(op.types) != 1 or not op.arg_types:
        return None
    out, inp = width(op.types[0]), width(op.arg_types[-1])
    if out is None or inp is None or any(width(t) is None for t in op.arg_types) or len(a) != len(op.args):
        return None
    name = op.name
    result: int | None
    if name == "arith.cmpi":
        pred = _predicate(op.attrs.get("predicate", ""))
        if pred is None:
            return None
        return int(compare(pred.lstrip("su"), a[0], a[1], inp, pred[0] == "s"))
    if name == "arith.select":
        return a[1] if a[0] & 1 else a[2]
    if name in ("arith.extsi", "arith.index_cast"):
        result = to_signed(a[0], inp) if out >= inp else a[0]
    elif name in ("arith.extui", "arith.trunci", "arith.index_castui"):
        result = a[0]
    elif name == "arith.bitcast":
        result = a[0] if out == inp else None
    elif name in ("arith.addi", "arith.subi", "arith.muli"):
        sa, sb = to_signed(a[0], inp), to_signed(a[1], inp)
        fn: Callable[[int, int], int] = {
            "arith.addi": lambda p, q: p + q,
            "arith.subi": lambda p, q: p - q,
            "arith.muli": lambda p, q: p * q,
        }[name]
        if _overflows(op, fn(sa, sb), fn(a[0], a[1]), inp):
            return None
        result = fn(a[0], a[1])
    elif name in ("arith.shli", "arith.shrsi", "arith.shrui"):
        result = _shift(name, a[0], a[1], inp)
        if result is not None and name == "arith.shli" and _overflows(op, to_signed(a[0], inp) << a[1], result, inp):
            return None
    elif "div" in name or "rem" in name:
        result = _division(name, a[0], a[1], inp)
    elif name in ("arith.minsi", "arith.maxsi"):
        result = (min if name == "arith.minsi" else max)(a[0], a[1], key=lambda v: to_signed(v, inp))
    elif name in ("arith.minui", "arith.maxui"):
        result = (min if name == "arith.minui" else max)(a[0], a[1])
    elif name in ("math.absi", "math.ctpop", "math.ctlz", "math.cttz") and len(a) == 1:
        x = a[0]
        bits = [(x >> k) & 1 for k in range(inp)]
        result = {
            "math.absi": abs(to_signed(x, inp)),  # the signed minimum stays itself
            "math.ctpop": sum(bits),
            "math.ctlz": next((k for k in range(inp) if bits[inp - 1 - k]), inp),
            "math.cttz": next((k for k in range(inp) if bits[k]), inp),
        }[name]
    elif name in ("arith.andi", "arith.ori", "arith.xori"):
        result = {"arith.andi": a[0] & a[1], "arith.ori": a[0] | a[1], "arith.xori": a[0] ^ a[1]}[name]
    else:
        return None
    return None if result is None else result & mask(out)
