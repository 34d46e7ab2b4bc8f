"""Every private jax (and tokamax) API the project relies on, checked on its own, so that a version bump that moves
or changes one fails HERE, by name, instead of as a mysterious harness error (or, worse, a check that silently
stops checking). Each test names its user. The supported versions are pyproject.toml's pins; these tests were
written against jax 0.10.2 and tokamax 0.0.12: on a bump, re-read the named jax source, adapt the user, then
this test.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, Requirement]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {(r := Requirement(d)).name: r for d in deps}


@pytest.mark.parametrize("dist", ["jax", "jaxlib", "tokamax"])
def test_installed_versions_are_the_supported_ones(dist):
    """The private APIs below are verified for pyproject.toml's ranges only."""
    pin = _pins()[dist]
    installed = importlib.metadata.version(dist)
    assert pin.specifier.contains(installed, prereleases=True), (
        f"{dist} {installed} is outside the supported range {pin.specifier}: re-verify tests/deps/test_private_apis.py"
    )


def test_export_stable_custom_call_targets():
    """bench/harness/inspection.py allowed_custom_calls: the custom-call allow-list is jax.export's own list of
    targets guaranteed stable (jax/_src/export/_export.py)."""
    from jax._src.export import _export

    stable = _export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE
    assert isinstance(stable, set | frozenset) and all(isinstance(t, str) for t in stable)
    assert {"Sharding", "tpu_custom_call"} <= set(stable)  # Mosaic kernels and sharding annotations
    assert len(stable) > 20


def test_mlir_parse_and_tensor_types():
    """bench/harness/inspection.py read_module/_constant_bytes: an exported module's text parsed with jax's MLIR
    context (jax/_src/interpreters/mlir.py make_ir_context, jax/_src/lib/mlir ir), constants read by type."""
    import jax
    import jax.numpy as jnp
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    table = np.array([1.0, 2.0, 3.0, 5.0], np.float32)  # embedded in the program as a constant
    exported = jax.export.export(jax.jit(lambda x: x * table))(jax.ShapeDtypeStruct((4,), jnp.float32))
    module = ir.Module.parse(exported.mlir_module(), context=jax_mlir.make_ir_context())

    def walk(op):
        yield op
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    yield from walk(inner.operation)

    ops = list(walk(module.operation))
    names = [op.name for op in ops]
    const = next(op for op in ops if op.name == "stablehlo.constant")
    t = ir.RankedTensorType(const.result.type)
    assert "stablehlo.multiply" in names and list(t.shape) == [4] and "f32" in str(t.element_type)
    assert "value" in const.attributes


def test_export_serialization_needs_flatbuffers():
    """Why pyproject.toml declares flatbuffers: jax.export's serialize/deserialize (the build -> runner transport
    of every candidate) imports it, and jax does not declare it as a dependency."""
    import jax
    import jax.numpy as jnp
    from jax._src.export import serialization

    assert "flatbuffers" in Path(serialization.__file__).read_text()
    exported = jax.export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((2,), jnp.float32))
    back = jax.export.deserialize(bytearray(exported.serialize()))
    assert back.in_avals == exported.in_avals


def test_pallas_interpret_mode_config_switch():
    """bench/harness/sandbox/child.py: HLO interpret mode for pallas_calls built inside a block, through the config
    option `pltpu.force_tpu_interpret_mode` sets (jax/_src/config.py), swapped per thread."""
    from jax._src import config as jax_config

    option = jax_config.pallas_tpu_interpret_mode_context_manager
    previous = option.swap_local(True)
    try:
        assert option.value
    finally:
        option.set_local(previous)
    assert not option.value


def test_mosaic_tpu_info_registry():
    """bench/harness/sandbox/child.py: cross-lowering for TPU on a host without one registers v6e's facts under the
    host's device kind in Mosaic's chip registry (jax/_src/pallas/mosaic/tpu_info.py)."""
    from jax._src.pallas.mosaic import tpu_info

    assert isinstance(tpu_info.registry, dict)
    assert tpu_info.chip_version_from_device_kind("cpu") is None
    version = tpu_info.chip_version_from_device_kind("TPU v6 lite")
    assert version is not None
    info = tpu_info.get_tpu_info_for_chip(version, 1)
    assert info is not None
    assert isinstance(tpu_info.get_device_kind(), str)


def test_tokamax_ragged_dot_mosaic_module():
    """pallas_refs/megablox_gmm.py: the hand-tuned 11p reference imports tokamax's Mosaic TPU ragged dot from
    tokamax._src (no public path)."""
    module = importlib.import_module("tokamax._src.ops.ragged_dot.pallas_mosaic_tpu")
    assert callable(module.Config) and callable(module.PallasMosaicTpuRaggedDot)


def test_profile_data_reader_is_jax_profilers():
    """bench/harness/parent/timing.py load_events reads traces with jaxlib's ProfileData extension directly (the
    parent does not import jax for it): it must be the very class jax.profiler exports."""
    import jax.profiler
    from jaxlib._profile_data import ProfileData

    assert ProfileData is jax.profiler.ProfileData
    assert callable(ProfileData.from_serialized_xspace)


def test_the_export_flatbuffer_slots_and_jaxlib_mlir_the_inspection_worker_reads_without_jax():
    """bench/harness/inspection/exported.py reads jax.export's flatbuffer at fixed vtable slots (the schema only
    appends, but a bump must re-check them: jax/_src/export/serialization.fbs), and module.context() builds jax's
    MLIR context from jaxlib alone (jax/_src/interpreters/mlir.py make_ir_context: _jax_mlir_ext.register_dialects,
    then sdy, mpmd, mhlo, chlo, stablehlo); Mosaic's bindings add the search prefix module.context() replaces."""
    import inspect
    import re

    from jax._src.export import serialization_generated as generated
    from jax._src.interpreters import mlir as jax_mlir

    from bench.harness.inspection import exported

    def slot(cls: type, method: str) -> int:
        found = re.search(r"Offset\((\d+)\)", inspect.getsource(getattr(cls, method)))
        assert found, (cls.__name__, method)
        return int(found.group(1))

    e, a = generated.Exported, generated.AbstractValue
    assert slot(e, "InAvals") == exported._IN_AVALS and slot(e, "OutAvals") == exported._OUT_AVALS
    assert slot(e, "NrDevicesShort") == exported._NR_DEVICES_SHORT and slot(e, "NrDevices") == exported._NR_DEVICES
    assert slot(e, "Platforms") == exported._PLATFORMS and slot(e, "MlirModuleSerialized") == exported._MODULE
    assert slot(e, "UniqueAvals") == exported._UNIQUE_AVALS
    assert slot(e, "InAvalsIdxs") == exported._IN_AVALS_IDXS and slot(e, "OutAvalsIdxs") == exported._OUT_AVALS_IDXS
    assert slot(a, "Shape") == exported._AVAL_SHAPE and slot(a, "Dtype") == exported._AVAL_DTYPE
    names = [n for n in vars(generated.DType) if not n.startswith("_")]
    assert [getattr(generated.DType, n) for n in names[: len(exported.DTYPE_NAMES)]] == list(
        range(len(exported.DTYPE_NAMES))
    )

    source = inspect.getsource(jax_mlir.make_ir_context)
    for call in ("register_dialect", "register_mhlo_dialect", "sdy", "mpmd", "chlo", "hlo"):
        assert call in source, call
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _mlir
    from jaxlib.mosaic.python import tpu  # noqa: F401

    assert callable(_jax_mlir_ext.register_dialects)
    assert isinstance(_mlir.globals.dialect_search_modules, list)


def test_relabelling_an_exported_module():
    """bench/harness/runner/executed.py relabel: an export's VHLO module read with
    jax._src.lib._jax.mlir.deserialize_portable_artifact, every op's location set (a writable `location` on MLIR
    operations), written back with jax/_src/export/_export.py `_module_to_bytecode`, the Exported rebuilt with
    dataclasses.replace; XLA's op_name then joins the locations of the calls an op was inlined through."""
    import dataclasses
    import re

    import jax
    import jax.numpy as jnp
    from jax._src.export import _export
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jax._src.lib.mlir import ir

    inner = jax.jit(lambda x: x * 2.0)
    exp = jax.export.export(jax.jit(lambda x: inner(x) + 1.0))(jax.ShapeDtypeStruct((4,), jnp.float32))
    with mlir.make_ir_context(), ir.Location.unknown():
        module = _jax.mlir.deserialize_portable_artifact(exp.mlir_module_serialized)
        for func in module.body.operations:
            name = ir.StringAttr(func.attributes["sym_name"]).value
            stack = [func]
            while stack:
                for region in stack.pop().regions:
                    for block in region.blocks:
                        for op in block.operations:
                            op.location = ir.Location.name(f"label_{name}")
                            stack.append(op)
        relabelled = dataclasses.replace(exp, mlir_module_serialized=_export._module_to_bytecode(module))
    compiled = jax.jit(relabelled.call).lower(jax.ShapeDtypeStruct((4,), jnp.float32)).compile()
    names = set(re.findall(r'op_name="([^"]*)"', compiled.as_text() or ""))
    assert any("label_main/label_" in n for n in names), names  # the inlined callee's op, under main's call
    assert float(compiled(jnp.ones(4, jnp.float32))[0]) == 3.0
