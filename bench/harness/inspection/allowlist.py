"""The ops an exported program may contain: a POSITIVE allow-list (TRUSTED).

Why positive: a deny-list missed `stablehlo.rng` (issue #23), whose hidden per-executable state tells a
program how many times it ran, and with it which call the runner checks. Here every op must be a pure
function of its operands: the same inputs give the same outputs, on every call, in any process. Anything
else is refused with a reason that names the op; the runner never sees that program.

Refused on purpose (not in the lists below):
- state or nondeterminism: `stablehlo.rng` (hidden RNG state), `partition_id`, `replica_id`;
- tokens and host transfers: `create_token`, `after_all`, `send`, `recv`, `infeed`, `outfeed` (host_callback);
- collectives: a single-device program has no peer to talk to;
- custom calls outside CUSTOM_CALL_TARGETS, or any custom call marked `has_side_effect`; `AllocateBuffer`
  (an uninitialised buffer: whatever the previous call left there) and `annotate_device_placement` (host
  memory) are left out of jax's stable list on purpose.
Not here, and never seen: `stablehlo.composite`. The reader (`module.read`) turns each into a `func.call` of its
decomposition, which is what it computes, so the work reading, the comparison and this list walk that function; left
an op, its decomposition was reached only through an attribute (red team 5: a whole attention inside one read as its
bytes, and `lax.platform_dependent` inside one made the TPU program differ unseen). jax writes `lax.top_k` as one.
`stablehlo.rng_bit_generator` is allowed: its state is an operand and a result (pure as an op).
"""

from __future__ import annotations

from bench.harness.inspection.module import Op

STABLEHLO = frozenset(
    f"stablehlo.{n}"
    for n in tuple(
        """
        abs add and atan2 batch_norm_grad batch_norm_inference batch_norm_training bitcast_convert broadcast
        broadcast_in_dim case cbrt ceil cholesky clamp compare complex concatenate constant convert convolution
        cosine count_leading_zeros custom_call divide dot dot_general dynamic_broadcast_in_dim dynamic_conv
        dynamic_gather dynamic_iota dynamic_pad dynamic_reshape dynamic_slice dynamic_update_slice einsum
        exponential exponential_minus_one fft floor gather get_dimension_size get_tuple_element if imag iota
        is_finite log log_plus_one logistic map maximum minimum multiply negate not optimization_barrier or pad
        popcnt power real real_dynamic_slice reduce reduce_precision reduce_window remainder reshape return reverse
        rng_bit_generator round_nearest_afz round_nearest_even rsqrt scatter select select_and_scatter
        set_dimension_size shift_left shift_right_arithmetic shift_right_logical sign sine slice sort sqrt subtract
        tan tanh torch_index_select transpose triangular_solve tuple unary_einsum uniform_dequantize
        uniform_quantize while xor
        """.split()
    )
)
#: CHLO is XLA's client math library: elementwise and linear-algebra functions, none with state.
CHLO = frozenset(
    f"chlo.{n}"
    for n in tuple(
        """
        acos acosh asin asinh atan atanh bessel_i1e broadcast_add broadcast_and broadcast_atan2 broadcast_compare
        broadcast_complex broadcast_divide broadcast_maximum broadcast_minimum broadcast_multiply
        broadcast_next_after broadcast_or broadcast_polygamma broadcast_power broadcast_remainder broadcast_select
        broadcast_shift_left broadcast_shift_right_arithmetic broadcast_shift_right_logical broadcast_subtract
        broadcast_xor broadcast_zeta conj constant constant_like cosh digamma erf erf_inv erfc is_inf is_neg_inf
        is_pos_inf lgamma mulhi next_after polygamma ragged_dot sinh square tan top_k zeta
        """.split()
    )
)
FUNC = frozenset({"func.call", "func.return"})
#: Shardy's sharding markers (jax 0.10 emits them around some ops): annotations, no computation.
SHARDY = frozenset({"sdy.sharding_constraint"})
ALLOWED_OPS = STABLEHLO | CHLO | FUNC | SHARDY

HOST_TRANSFER_OPS = frozenset(
    set(
        """
        stablehlo.send stablehlo.recv stablehlo.infeed stablehlo.outfeed stablehlo.create_token stablehlo.after_all
        mhlo.send mhlo.recv mhlo.infeed mhlo.outfeed
        """.split()
    )
)
HOST_CALLBACK_MARKERS = ("callback", "python", "call_tf")
MOSAIC_TARGET = "tpu_custom_call"

#: Custom-call targets a program may use: jax's stable ones that compute a pure function of their operands.
CUSTOM_CALL_TARGETS = (
    frozenset(
        {
            MOSAIC_TARGET,
            "mosaic_gpu_v2",  # Pallas kernels (TPU Mosaic / GPU)
            "Sharding",
            "SPMDFullToShardShape",
            "SPMDShardToFullShape",  # sharding markers
            "ApproxTopK",
            "Eigh",
            "LuDecomposition",
            "ProductOfElementaryHouseholderReflectors",
            "Qr",  # XLA expanders
            "cu_lu_pivots_to_permutation",
            "cu_threefry2x32_ffi",
            "hip_lu_pivots_to_permutation",
            "hip_threefry2x32_ffi",
            "stablehlo.dynamic_approx_top_k",
            "stablehlo.dynamic_reduce_window",
            "stablehlo.dynamic_rng_bit_generator",
            "stablehlo.dynamic_top_k",
        }
    )
    | frozenset(
        f"{lib}_{p}{routine}_ffi"
        for lib in ("lapack",)
        for p in "sdcz"
        for routine in tuple(
            """
            gees geev gehrd geqrf gesdd getrf gtsv potrf trsm orgqr ungqr syevd heevd sytrd hetrd
            """.split()
        )
    )
    | frozenset(
        f"{lib}_{routine}_ffi"
        for lib in ("cusolver", "hipsolver")
        for routine in ("geqrf", "gesvd", "gesvdj", "gesdd", "getrf", "orgqr", "potrf", "syevd", "sytrd")
    )
    | {"cusparse_gtsv2_ffi"}
)


def custom_call_target(op: Op) -> str:
    return op.attrs.get("call_target_name", "").strip('"')


def refusal(op: Op) -> tuple[str, str] | None:
    """(flag kind, reason naming the op) when `op` is not allowed; None when it is.
    Kinds: host_callback (host code or host transfer), native_call (a custom call outside the list),
    stateful_op (state, nondeterminism, side effects, uninitialised memory, anything else unknown)."""
    name = op.name
    if name in HOST_TRANSFER_OPS:
        return "host_callback", f"`{name}` (a host transfer / token op)"
    if name not in ALLOWED_OPS:
        return "stateful_op", f"`{name}` (not a pure function of its operands, or not on the allow-list of ops)"
    if name == "stablehlo.custom_call":
        target = custom_call_target(op)
        if any(m in target.lower() for m in HOST_CALLBACK_MARKERS):
            return "host_callback", f"custom call `{target}` (host code)"
        if target not in CUSTOM_CALL_TARGETS:
            return "native_call", f"custom call `{target}` (not on the allow-list of targets)"
        if op.attrs.get("has_side_effect", "false").strip() not in ("false", ""):
            return "stateful_op", f"custom call `{target}` marked has_side_effect"
    return None
