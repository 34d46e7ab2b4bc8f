"""Chip normalization on device_kind strings as real chips report them, and the peak table."""

import pytest

from bench import hardware


@pytest.mark.parametrize(
    "kind,chip",
    [
        ("TPU v6 lite", "v6e"),
        ("TPU v6e", "v6e"),
        ("TPU v5 lite", "v5e"),
        ("TPU v5e", "v5e"),
        ("TPU v5p", "v5p"),
        ("TPU v5", "v5p"),
        ("TPU v4", "v4"),
        ("TPU7x", "7x"),
        ("TPU 7x", "7x"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA H200", "h200"),
        ("cpu", "cpu"),
        ("Some New Chip 9", "some_new_chip_9"),
    ],
)
def test_normalize_recorded_device_kinds(kind, chip):
    assert hardware.normalize_chip(kind) == chip


def test_every_named_chip_has_a_sourced_peak():
    for chip in ("v4", "v5e", "v5p", "v6e", "7x", "h100", "h200", "cpu"):
        spec = hardware.chip_spec(chip)
        assert spec is not None and spec.peak_bf16_tflops > 0 and spec.hbm_gb_s > 0 and spec.source
    assert hardware.chip_spec("v6e").peak_bf16_tflops == 918.0
    assert hardware.chip_spec("v5e").peak_bf16_tflops == 197.0
    assert hardware.chip_spec("cpu").nominal and not hardware.chip_spec("v6e").nominal


def test_default_size_follows_the_backend():
    assert hardware.default_size("tpu") == "full"
    assert hardware.default_size("gpu") == "full"
    assert hardware.default_size("cpu") == "small"


def test_detect_on_this_machine():
    info = hardware.detect()
    assert info["chip"] == hardware.normalize_chip(info["device_kind"])
    assert info["jax_version"] and info["jaxlib_version"]
