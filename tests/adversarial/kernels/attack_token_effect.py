"""Attack (class 1): a token (`stablehlo.create_token`), the thread of ordered side effects, kept alive through an
optimization barrier. Forged StableHLO, as in attack_uninitialised_buffer.
Must be refused by the parent's positive allow-list, naming the op."""

import dataclasses

import jax
import jax.numpy as jnp

_MODULE = """
module @jit_candidate_program attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<256x512xbf16>, %arg1: tensor<512x384xbf16>) -> (tensor<256x384xbf16>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<256x512xbf16>, tensor<512x384xbf16>) -> tensor<256x384xbf16>
    %t = stablehlo.create_token : !stablehlo.token
    %1:2 = stablehlo.optimization_barrier %0, %t : tensor<256x384xbf16>, !stablehlo.token
    return %1#0 : tensor<256x384xbf16>
  }
}
"""
_real_export = jax.export.export


def _forging_export(fn, *args, **kwargs):
    make = _real_export(fn, *args, **kwargs)

    def run(*avals):
        exp = make(*avals)
        if tuple(exp.platforms) != ("cpu",):
            return exp
        from jax._src.export import _export as export_impl
        from jax._src.interpreters import mlir
        from jax._src.lib.mlir import ir

        with mlir.make_ir_context():
            module = ir.Module.parse(_MODULE)
            return dataclasses.replace(exp, mlir_module_serialized=export_impl._module_to_bytecode(module))
    return run


jax.export.export = _forging_export


def workload(A, B):
    return jnp.dot(A, B)
