"""The tokamax workarounds are scoped: nothing they change survives the `with` block."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
from absl import flags
from jax.experimental.pallas import tpu as pltpu
from tokamax._src.ops.ragged_dot import pallas_mosaic_tpu as tk_rd

from pallas_refs import library_quirks as lq


class _Base:
    def supported_on(self, device):
        return "base"


class _Child(_Base):  # inherits supported_on: the patch must be removed, not copied onto the class
    pass


def test_absl_flags_parsed_only_inside():
    argv = list(sys.argv)
    before = flags.FLAGS.is_parsed()
    with lq.absl_flags_parsed():
        assert flags.FLAGS.is_parsed()
    assert flags.FLAGS.is_parsed() == before
    assert sys.argv == argv


def test_supported_everywhere_restores_own_and_inherited_attributes():
    own = tk_rd.PallasMosaicTpuRaggedDot.__dict__["supported_on"]
    with lq.supported_everywhere([tk_rd.PallasMosaicTpuRaggedDot, _Child]):
        assert _Child().supported_on(None) is True
    assert tk_rd.PallasMosaicTpuRaggedDot.__dict__["supported_on"] is own
    assert "supported_on" not in _Child.__dict__ and _Child().supported_on(None) == "base"


def test_simulated_tpu_mesh_is_gone_after_the_block():
    assert jax.sharding.get_abstract_mesh().empty
    with lq.simulated_tpu():
        assert not jax.sharding.get_abstract_mesh().empty
    assert jax.sharding.get_abstract_mesh().empty


def test_tokamax_op_runs_on_cpu_inside_and_leaves_no_trace():
    """A tokamax TPU op inside the combined scope works in interpret mode; afterwards every global is as before."""
    argv, parsed, own = list(sys.argv), flags.FLAGS.is_parsed(), tk_rd.PallasMosaicTpuRaggedDot.__dict__["supported_on"]
    lhs = jnp.ones((256, 128), jnp.float32)
    rhs = jnp.ones((2, 128, 128), jnp.float32)
    sizes = jnp.array([128, 128], jnp.int32)
    with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()), lq.tokamax_tpu_ops([tk_rd.PallasMosaicTpuRaggedDot]):
        out = tk_rd.PallasMosaicTpuRaggedDot(config=tk_rd.Config(tile_m=128, tile_k=128, tile_n=128))(
            lhs, rhs, group_sizes=sizes
        )
    assert float(jnp.abs(out - 128.0).max()) == 0.0
    assert sys.argv == argv and flags.FLAGS.is_parsed() == parsed
    assert tk_rd.PallasMosaicTpuRaggedDot.__dict__["supported_on"] is own
    assert jax.sharding.get_abstract_mesh().empty
